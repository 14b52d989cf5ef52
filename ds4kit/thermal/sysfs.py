"""Reading sysfs files under a root that tests can point at a fake tree (``--sysfs-root``)."""
from __future__ import annotations

import os
from pathlib import Path


def under(root: str | os.PathLike, path: str) -> Path:
    return Path(root) / path.lstrip("/")


def read_text(path: Path) -> str:
    with open(path, "r", encoding="ascii", errors="replace") as f:
        return f.read().strip()


def read_int(path: Path) -> int:
    text = read_text(path)
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"{path}: expected an integer, found {text[:40]!r}") from None


def read_bytes(path: Path) -> bytes:
    with open(path, "rb") as f:
        return f.read()


def check_readable(path: Path) -> str | None:
    """None if the file reads, else why not (a missing, unreadable or odd file)."""
    try:
        with open(path, "rb") as f:
            f.read(1)
    except OSError as exc:
        return f"{path}: {type(exc).__name__}: {exc.strerror or exc}"
    return None


def hwmon_dirs(root: str | os.PathLike, chip_name: str) -> list[tuple[Path, str | None]]:
    """(hwmonN dir, None) for each hwmon whose ``name`` is chip_name; (dir, reason) where the name is unreadable."""
    base = under(root, "/sys/class/hwmon")
    out = []
    for d in sorted(base.glob("hwmon*"), key=lambda p: (len(p.name), p.name)):
        try:
            name = read_text(d / "name")
        except OSError as exc:
            out.append((d, f"{d / 'name'}: {type(exc).__name__}"))
            continue
        if name == chip_name:
            out.append((d, None))
    return out
