"""Backends: one module per vendor/runtime; nothing outside this package knows a vendor."""
