"""Where rollouts run: in driver threads (default) or on a Ray cluster. See `executor.Executor`."""
