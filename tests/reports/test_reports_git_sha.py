"""The manifest's git sha: HEAD in a checkout, else the sha CMake compiled into the engine (a
package installed from a clone), and which of the two it is."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from ds4kit import _engine
from ds4kit.reports.manifest import build_manifest

REPO = Path(__file__).resolve().parents[2]


def test_checkout_sha_is_head():
    head = subprocess.run(["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    assert build_manifest()["ds4kit"] == {"version": build_manifest()["ds4kit"]["version"], "git_sha": head,
                                          "git_sha_source": "checkout"}


def test_package_outside_a_checkout_falls_back_to_the_engine_build(tmp_path):
    # A copy of the package (engine included) where no .git is above it: as after `pip install .`.
    site = tmp_path / "site"
    shutil.copytree(REPO / "ds4kit", site / "ds4kit", ignore=shutil.ignore_patterns("__pycache__"))
    code = ("import json; from ds4kit.reports.manifest import build_manifest; import ds4kit; "
            "print(json.dumps([ds4kit.__file__, build_manifest()['ds4kit']]))")
    env = dict(os.environ, PYTHONPATH=str(site))
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    where, ds4 = json.loads(out.stdout)
    assert Path(where).is_relative_to(site)
    want = dict(_engine.build_info)["git_sha"]
    assert len(want) == 40, "this engine was built outside git; the fallback has nothing to find"
    assert ds4["git_sha"] == want and ds4["git_sha_source"] == "engine-build"
