"""Run folders and reports (architecture.md principle 3).

Every command writes ``runs/<kind>-<utc>/`` (or ``--out``) holding ``report.json``
(validated against ``reports/schema/<kind>.json``), ``summary.md``, tables as CSV,
plots as PNG and, for long runs, an append-only ``items.jsonl`` used by ``--resume``.
"""
from ds4kit.reports.atomic import atomic_write_bytes, atomic_write_json, atomic_write_text
from ds4kit.reports.items import ItemLog
from ds4kit.reports.run import Run, Warning_, start_run
from ds4kit.reports.schema import SchemaError, validate_report

__all__ = [
    "ItemLog",
    "Run",
    "SchemaError",
    "Warning_",
    "atomic_write_bytes",
    "atomic_write_json",
    "atomic_write_text",
    "start_run",
    "validate_report",
]
