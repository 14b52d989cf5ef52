"""What changed between two reports' results, field by field: the comparison for report kinds
that describe a thing (a model file, a card, a tokenization) rather than measure a run. Lists
and values are compared as they are; nested objects by key, as dotted paths."""
from __future__ import annotations

from typing import Any

MAX_SHOWN = 200  # changed paths listed (a whole changed table would drown the rest)

# The report kinds compared field by field, and the result fields each leaves out (timings:
# they differ on every run).
KINDS: dict[str, tuple[str, ...]] = {
    "model-card": (),
    "model-hash": ("seconds", "cached"),
    "model-info": (),
    "model-synth": ("seconds",),
    "model-tokenize": (),
}


def changes(a: Any, b: Any, path: str = "") -> list[dict[str, Any]]:
    if isinstance(a, dict) and isinstance(b, dict):
        out: list[dict[str, Any]] = []
        for k in sorted(set(a) | set(b), key=str):
            p = f"{path}.{k}" if path else str(k)
            if k not in a:
                out.append({"path": p, "a": None, "b": b[k], "change": "added"})
            elif k not in b:
                out.append({"path": p, "a": a[k], "b": None, "change": "removed"})
            else:
                out.extend(changes(a[k], b[k], p))
        return out
    return [] if a == b else [{"path": path, "a": a, "b": b, "change": "changed"}]


def diff_results(a: dict, b: dict, ignore: tuple[str, ...] = ()) -> dict[str, Any]:
    found = [c for c in changes(a["results"], b["results"])
             if not any(c["path"] == i or c["path"].startswith(i + ".") for i in ignore)]
    return {"changed": len(found), "fields": found[:MAX_SHOWN], "truncated": len(found) > MAX_SHOWN,
            "ignored": list(ignore)}


def _short(v: Any) -> str:
    text = repr(v)
    return text if len(text) <= 60 else text[:57] + "..."


def markdown(d: dict[str, Any]) -> str:
    if not d["changed"]:
        return "No field of the results differs" + (f" (ignoring {', '.join(d['ignored'])})" if d["ignored"] else "") + ".\n"
    out = [f"{d['changed']} fields differ" + (f" (first {len(d['fields'])} shown)" if d["truncated"] else "") + ":", "",
           "| field | A | B |", "|---|---|---|"]
    out += [f"| `{c['path']}` | {_short(c['a'])} | {_short(c['b'])} |" for c in d["fields"]]
    return "\n".join(out) + "\n"


class FieldDiffer:
    """The differ of one KINDS entry (the interface of a kind_*.py module)."""

    def __init__(self, kind: str, ignore: tuple[str, ...]):
        self.KIND = kind
        self.ignore = ignore

    def diff(self, a: dict, b: dict, a_dir: Any = None, b_dir: Any = None) -> dict[str, Any]:
        return diff_results(a, b, self.ignore)

    @staticmethod
    def markdown(d: dict[str, Any]) -> str:
        return markdown(d)
