"""The run manifest: what ran, where, on what, so two reports can be compared honestly."""
from __future__ import annotations

import os
import platform
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

from ds4kit import __version__

# Environment variables that change what ds4kit or the GPU stack does; recorded in every report.
BEHAVIOUR_ENV_PREFIXES = ("DS4KIT_", "OMP_", "CUDA_", "HIP_", "ROCR_", "HSA_", "GGML_", "LLAMA_", "DFLASH_", "LUCE_")
BEHAVIOUR_ENV_NAMES = ("OPENBLAS_CORETYPE", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "HUMANEVAL_OVERRIDE_PATH")


def _checkout_sha() -> str | None:
    """HEAD of the git checkout ds4kit runs from (PYTHONPATH=. or an editable install)."""
    repo = Path(__file__).resolve().parents[2]
    if not (repo / ".git").exists():
        return None
    try:
        out = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.TimeoutExpired):
        return None
    sha = out.stdout.strip()
    return sha if out.returncode == 0 and len(sha) == 40 else None


def _engine_build_sha() -> str | None:
    """The sha CMake recorded when this package's engine was built (a wheel installed from a clone)."""
    try:
        from ds4kit import _engine  # type: ignore[attr-defined]
    except ImportError:
        return None
    sha = str(dict(_engine.build_info).get("git_sha") or "")
    return sha if len(sha) == 40 else None  # "unknown" when the build tree had no git


def ds4kit_git_sha_and_source() -> tuple[str | None, str | None]:
    """(sha, where it came from: "checkout", "engine-build" or None)."""
    sha = _checkout_sha()
    if sha:
        return sha, "checkout"
    sha = _engine_build_sha()
    return (sha, "engine-build") if sha else (None, None)


def ds4kit_git_sha() -> str | None:
    return ds4kit_git_sha_and_source()[0]


def _cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"


def _memory_bytes() -> int | None:
    try:
        import psutil

        return int(psutil.virtual_memory().total)
    except Exception:
        return None


def _nvidia_gpus() -> tuple[list[dict[str, Any]], str | None]:
    try:
        import pynvml
    except ImportError:
        return [], None
    try:
        pynvml.nvmlInit()
    except Exception:
        return [], None
    gpus = []
    try:
        driver = pynvml.nvmlSystemGetDriverVersion()
        driver = driver.decode() if isinstance(driver, bytes) else str(driver)
        for i in range(pynvml.nvmlDeviceGetCount()):
            h = pynvml.nvmlDeviceGetHandleByIndex(i)
            name = pynvml.nvmlDeviceGetName(h)
            name = name.decode() if isinstance(name, bytes) else str(name)
            mem = pynvml.nvmlDeviceGetMemoryInfo(h).total
            gpus.append({"vendor": "nvidia", "index": i, "name": name, "memory_bytes": int(mem)})
        return gpus, driver
    except Exception:
        return gpus, None
    finally:
        try:
            pynvml.nvmlShutdown()
        except Exception:
            pass


def _amd_gpus(sysfs_root: str = "/") -> list[dict[str, Any]]:
    gpus = []
    for card in sorted(Path(sysfs_root, "sys/class/drm").glob("card[0-9]*")):
        dev = card / "device"
        try:
            vendor = (dev / "vendor").read_text().strip()
        except OSError:
            continue
        if vendor != "0x1002":
            continue
        entry: dict[str, Any] = {"vendor": "amd", "card": card.name}
        for key, fname in (("device_id", "device"), ("revision", "revision")):
            try:
                entry[key] = (dev / fname).read_text().strip()
            except OSError:
                pass
        gpus.append(entry)
    return gpus


def _rocm_version() -> str | None:
    for p in ("/opt/rocm/.info/version", "/opt/rocm/.info/version-dev"):
        try:
            return Path(p).read_text().strip()
        except OSError:
            continue
    return None


def host_info() -> dict[str, Any]:
    nv, driver = _nvidia_gpus()
    return {
        "hostname": socket.gethostname(),
        "os": f"{platform.system()} {platform.release()}",
        "kernel": platform.version(),
        "cpu": _cpu_name(),
        "cpu_count": os.cpu_count(),
        "memory_bytes": _memory_bytes(),
        "python": sys.version.split()[0],
        "gpus": nv + _amd_gpus(),
        "cuda_driver": driver,
        "rocm": _rocm_version(),
    }


def engine_info() -> dict[str, Any]:
    try:
        from ds4kit import _engine  # type: ignore[attr-defined]
    except ImportError as exc:
        return {"available": False, "error": str(exc)}
    build = dict(_engine.build_info)
    return {
        "available": True,
        "gpu_backend": build.get("gpu_backend"),
        "compiler": build.get("compiler"),
        "git_sha": build.get("git_sha"),
        "cpu_features": _engine.cpu_features(),
    }


def behaviour_env(environ: dict[str, str] | None = None) -> dict[str, str]:
    environ = dict(os.environ if environ is None else environ)
    return {
        k: v
        for k, v in sorted(environ.items())
        if k.startswith(BEHAVIOUR_ENV_PREFIXES) or k in BEHAVIOUR_ENV_NAMES
    }


def build_manifest(
    command: list[str] | None = None,
    model: dict[str, Any] | None = None,
    drafter: dict[str, Any] | None = None,
    card: dict[str, Any] | None = None,
) -> dict[str, Any]:
    sha, sha_source = ds4kit_git_sha_and_source()
    return {
        "ds4kit": {"version": __version__, "git_sha": sha, "git_sha_source": sha_source},
        "engine": engine_info(),
        "host": host_info(),
        "model": model,
        "drafter": drafter,
        "card": card,
        "target": None,
        "command": list(sys.argv if command is None else command),
        "env": behaviour_env(),
    }
