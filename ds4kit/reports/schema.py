"""Validate reports against ``reports/schema/<kind>.json``.

Every kind's schema references the shared ``common.json`` (envelope, manifest,
warnings); the registry below resolves those references offline.
"""
from __future__ import annotations

import json
from functools import lru_cache
from typing import Any

import jsonschema
from referencing import Registry, Resource

from ds4kit.resources import schema_dir


class SchemaError(ValueError):
    """A report does not match its kind's schema (message names the path and kind)."""


@lru_cache(maxsize=None)
def _registry() -> Registry:
    resources = []
    for path in sorted(schema_dir().glob("*.json")):
        doc = json.loads(path.read_text(encoding="utf-8"))
        resources.append((path.name, Resource.from_contents(doc)))
    return Registry().with_resources(resources)


def known_kinds() -> list[str]:
    return sorted(p.stem for p in schema_dir().glob("*.json") if p.stem != "common")


def load_schema(kind: str) -> dict[str, Any]:
    path = schema_dir() / f"{kind}.json"
    if not path.exists():
        raise SchemaError(f"no schema for report kind {kind!r} (expected {path}); known: {known_kinds()}")
    return json.loads(path.read_text(encoding="utf-8"))


def validate_report(report: Any, kind: str | None = None) -> None:
    """SchemaError (one message, never another exception) unless `report` matches its kind's schema."""
    if not isinstance(report, dict):
        raise SchemaError(f"a report is a JSON object, not {type(report).__name__}")
    kind = kind or report.get("kind")
    if not kind:
        raise SchemaError("report has no 'kind' field")
    if not isinstance(kind, str) or kind not in known_kinds():
        raise SchemaError(f"unknown report kind {kind!r}; known: {', '.join(known_kinds())}")
    schema = load_schema(kind)
    validator_cls = jsonschema.validators.validator_for(schema)
    validator = validator_cls(schema, registry=_registry())
    errors = sorted(validator.iter_errors(report), key=lambda e: list(e.absolute_path))
    if errors:
        # One line per distinct problem (a value can fail the same way in several schema branches).
        lines = list(dict.fromkeys(
            f"  at {'/'.join(str(p) for p in e.absolute_path) or '(root)'}: {e.message}" for e in errors))
        more = f"\n  ... and {len(lines) - 10} more" if len(lines) > 10 else ""
        lines = lines[:10]
        raise SchemaError(f"{kind} report does not match reports/schema/{kind}.json:\n" + "\n".join(lines) + more)
