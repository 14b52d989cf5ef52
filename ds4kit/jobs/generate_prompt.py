"""The prompt of a `generate` run: --prompt, --prompt-file or --messages, read and checked."""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ds4kit.errors import ConfigError


@dataclass(frozen=True)
class PromptInput:
    messages: list[dict[str, Any]]
    plain: str | None          # the user text as given (--prompt / --prompt-file); None for --messages


def _read_text(path: Path, option: str) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{path} does not exist", option) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path} cannot be read as UTF-8 text ({exc})", option) from None


def _messages(path: Path) -> list[dict[str, Any]]:
    try:
        msgs = json.loads(_read_text(path, "--messages"))
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{path}: not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})",
                          "--messages") from None
    if isinstance(msgs, dict) and "messages" in msgs:
        msgs = msgs["messages"]
    if not isinstance(msgs, list) or not msgs:
        raise ConfigError(f"{path}: expected a non-empty JSON list of messages", "--messages")
    for i, m in enumerate(msgs):
        if not isinstance(m, dict) or not isinstance(m.get("role"), str):
            raise ConfigError(f"{path}: message {i} is not an object with a string 'role'", "--messages")
    return msgs


def load_prompt(prompt: str | None, prompt_file: Path | None, messages_file: Path | None,
                system: str | None) -> PromptInput:
    given = [x is not None for x in (prompt, prompt_file, messages_file)]
    if sum(given) != 1:
        raise ConfigError("give exactly one of --prompt, --prompt-file or --messages")
    if messages_file is not None:
        if system is not None:
            raise ConfigError("--system goes with --prompt or --prompt-file; put a system message in the "
                              "--messages file instead", "--system")
        return PromptInput(_messages(Path(messages_file)), None)
    if prompt is not None:
        text, option = prompt, "--prompt"
    else:
        text, option = _read_text(Path(prompt_file), "--prompt-file"), "--prompt-file"
    if not text:
        raise ConfigError("the prompt is empty", option)
    msgs = ([{"role": "system", "content": system}] if system else []) + [{"role": "user", "content": text}]
    return PromptInput(msgs, text)
