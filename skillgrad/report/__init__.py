"""Static, self-contained HTML report of one run (or a comparison of two): `write_report`."""

from skillgrad.report.html import write_report

__all__ = ["write_report"]
