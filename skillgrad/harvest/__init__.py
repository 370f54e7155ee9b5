"""Harvest: a user's own Claude Code sessions -> a task set to train a skill on."""
