"""Read a model card file and validate it against ``card.schema.json``."""
from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Any

import jsonschema

SCHEMA_PATH = Path(__file__).resolve().parent / "card.schema.json"


class CardError(ValueError):
    """A card file is missing, unreadable, not JSON, or does not match the schema (names file and field)."""


@lru_cache(maxsize=1)
def _validator() -> jsonschema.protocols.Validator:
    schema = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)


def validate_card(card: Any, origin: str) -> dict[str, Any]:
    """Return ``card`` if it matches the schema, else raise CardError naming ``origin`` and each bad field."""
    errors = sorted(_validator().iter_errors(card), key=lambda e: list(e.absolute_path))
    if errors:
        lines = []
        for e in errors[:10]:
            where = ".".join(str(p) for p in e.absolute_path) or "(top level)"
            lines.append(f"  {where}: {e.message}")
        raise CardError(f"model card {origin} is invalid:\n" + "\n".join(lines))
    return card


def load_card(path: str | Path) -> dict[str, Any]:
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise CardError(f"model card {path} does not exist") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise CardError(f"model card {path} cannot be read: {exc}") from None
    try:
        card = json.loads(text)
    except json.JSONDecodeError as exc:
        raise CardError(f"model card {path} is not JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from None
    return validate_card(card, str(path))
