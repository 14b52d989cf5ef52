"""Evals (HumanEval+, ...): one module per eval, each a job `run(config, target) -> report path`
like ds4kit.jobs, resumable through the run's items.jsonl. None yet."""
