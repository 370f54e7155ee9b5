"""skillgrad: train an agent's SKILL.md from scored runs."""

__version__ = "0.1.0"
