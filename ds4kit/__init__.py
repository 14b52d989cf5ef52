"""ds4kit: evaluation and diagnostics for DeepSeek V4 Flash, with its own embedded engine."""

__version__ = "0.1.0"
