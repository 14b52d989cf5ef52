"""Probes (identity, margins, prefix-cache, needle, ...): one module per probe, each a job
`run(config, target) -> report path` like ds4kit.jobs, asking its target for the capabilities it
needs (ds4kit.targets.Capabilities) and reporting what it could not measure (margins: ds4kit.probes.margins)."""
