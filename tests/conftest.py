"""Shared test setup. Tests import ds4kit from PYTHONPATH (scripts/test sets it to the
source tree after an in-place engine build) or from an installed wheel."""
