"""Skill packages: a SKILL.md folder with references and scripts, trained as one skill."""
