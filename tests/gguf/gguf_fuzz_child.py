"""Child process of the fuzz test: parses mutated files [start, stop) in a loop.

Runs in its own process so a crash (segfault, abort) or hang kills only this
child; the parent reads the last case index from the progress file to pinpoint
it and restarts after it. Exit 0 = every case either parsed or raised a ds4kit
error. Any other Python exception is printed as "BADEXC <index> <type>: <msg>".
"""
from __future__ import annotations

import os
import struct
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
if os.environ.get("DS4KIT_TEST_INSTALLED") != "1":  # same rule as tests/conftest.py
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from ds4kit import _engine  # noqa: E402
import gguf_mutator  # noqa: E402


def exercise(path: str) -> int:
    """Open, then touch everything the reader hands out."""
    f = _engine.GGUFFile(path)
    touched = 0
    for key, value in f.metadata.items():
        touched += len(f.metadata_type(key))
        if isinstance(value, str):
            touched += len(value)
    for t in f.tensors:
        view = f.tensor_data(t.name)
        touched += int(view[0]) + int(view[-1]) + len(t.shape)
    return touched


def main() -> int:
    seed_dir, work, progress, start, stop = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
    seeds, fields = gguf_mutator.load_seeds(Path(seed_dir))
    fd = os.open(progress, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    bad = 0
    stats = {"ok": 0, "rejected": 0}
    # Self-test hooks: prove the parent notices a crash or a hang at a given index.
    crash_at = int(os.environ.get("DS4_FUZZ_SELFTEST_CRASH_AT", "-1"))
    hang_at = int(os.environ.get("DS4_FUZZ_SELFTEST_HANG_AT", "-1"))
    for i in range(start, stop):
        # Progress: the case about to run and the tallies so far, so the parent
        # can account for every case even when this process dies.
        os.pwrite(fd, struct.pack("<qqq", i, stats["ok"], stats["rejected"]), 0)
        if i == crash_at:
            os.abort()
        if i == hang_at:
            time.sleep(3600)
        data = gguf_mutator.mutate(seeds, fields, i)
        with open(work, "wb") as out:
            out.write(data)
        try:
            exercise(work)
            stats["ok"] += 1
        except _engine.Ds4Error:
            stats["rejected"] += 1
        except Exception as e:  # noqa: BLE001 - anything but a ds4kit error is a bug
            bad += 1
            print(f"BADEXC {i} {type(e).__name__}: {e}", flush=True)
    os.pwrite(fd, struct.pack("<qqq", stop, stats["ok"], stats["rejected"]), 0)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
