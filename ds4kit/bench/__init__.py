"""Benchmarks (`ds4kit bench ...`)."""
