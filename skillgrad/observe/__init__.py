"""Watching a run: live progress and train.log (`progress`), experiment tracking (`tracking`)."""
