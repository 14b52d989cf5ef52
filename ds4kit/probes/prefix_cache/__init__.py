"""`ds4kit probe prefix-cache` (issue 10, part 4): the job and what it needs."""
from ds4kit.probes.prefix_cache.job import PrefixCacheProbeConfig, run

__all__ = ["PrefixCacheProbeConfig", "run"]
