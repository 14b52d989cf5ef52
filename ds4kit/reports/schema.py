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


def validate_report(report: dict[str, Any], kind: str | None = None) -> None:
    kind = kind or report.get("kind")
    if not kind:
        raise SchemaError("report has no 'kind' field")
    schema = load_schema(kind)
    validator_cls = jsonschema.validators.validator_for(schema)
    validator = validator_cls(schema, registry=_registry())
    errors = sorted(validator.iter_errors(report), key=lambda e: list(e.absolute_path))
    if errors:
        lines = []
        for e in errors[:10]:
            where = "/".join(str(p) for p in e.absolute_path) or "(root)"
            lines.append(f"  at {where}: {e.message}")
        more = f"\n  ... and {len(errors) - 10} more" if len(errors) > 10 else ""
        raise SchemaError(f"{kind} report does not match reports/schema/{kind}.json:\n" + "\n".join(lines) + more)
