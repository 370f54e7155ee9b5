"""Benchmarks: the Benchmark protocol, built-ins, and user JSONL benchmarks."""
