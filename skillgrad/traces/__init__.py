"""Agent transcripts -> TraceStep lists -> capped text for the optimizer."""
