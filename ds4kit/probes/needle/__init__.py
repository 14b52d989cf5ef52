"""`ds4kit probe needle` (issue 11, item 1): the job and what it needs."""
from ds4kit.probes.needle.job import NeedleConfig, run

__all__ = ["NeedleConfig", "run"]
