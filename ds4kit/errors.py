"""Errors every layer may raise about what the user asked for."""
from __future__ import annotations


class ConfigError(ValueError):
    """A bad option value, found before anything is loaded or written.

    `option` names the command-line flag it came from (e.g. "--top-p"), so the CLI can say which
    flag is wrong; Python callers get the same message."""

    def __init__(self, message: str, option: str | None = None):
        super().__init__(f"{option}: {message}" if option else message)
        self.message = message
        self.option = option
