"""The training loop: one small module per stage; trainer.py orchestrates."""
