"""Running one untrusted sample outside ds4kit's process, contained.

    box = Sandbox(Limits())              # probes once what this machine offers
    outcome = box.run(job)               # job: what sandbox_worker.py reads; -> Outcome

Layers, outermost first:
- bubblewrap (`bwrap`), when it works here: new network, PID, IPC and UTS namespaces (no
  network; every process the sample starts dies with the sandbox), a read-only view of only
  the system and Python folders, the sample's scratch folder as the one writable place
  (/sandbox), a new session, an empty environment. Run as root, bwrap is privileged and the
  worker drops to a uid of its own (root is exempt from RLIMIT_NPROC); run as a user, bwrap
  makes a user namespace.
- otherwise `unshare --net` where it works, else nothing: rlimits, a new session, the scratch
  folder as cwd, the dropped uid when root, and every process left by that uid killed after.
- resource limits (address space, CPU seconds, processes, file size, open files, no core),
  set by prlimit on the sandbox command and again by the worker.
- inside the worker: an audit hook that reports escape attempts (and, without bubblewrap,
  refuses them), and evalplus's own guard.

`describe()` says which of these ran; the report records it.
"""
from __future__ import annotations

import itertools
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

WORKER = Path(__file__).with_name("sandbox_worker.py")
_INSIDE = "/sandbox"


@dataclass(frozen=True)
class Limits:
    memory_mb: int = 1024      # address space of each process
    cpu_s: int = 60            # CPU seconds of each process (the wall limit is separate)
    processes: int = 16        # processes and threads of the sandbox's uid
    file_mb: int = 16          # largest file it may write
    open_files: int = 64

    def rlimits(self) -> dict[str, int]:
        return {"as": self.memory_mb << 20, "cpu": self.cpu_s, "nproc": self.processes,
                "fsize": self.file_mb << 20, "nofile": self.open_files, "core": 0}


@dataclass
class Outcome:
    """What came back from one sample's sandbox (the verdict is categories.classify's)."""

    syntax_error: str | None = None
    phases: dict[str, dict[str, Any]] = field(default_factory=dict)   # "base"/"plus" -> status, ...
    events: list[dict[str, Any]] = field(default_factory=list)        # escape attempts seen
    timeouts: int = 0                                                  # evalplus test time limits hit
    killed: str | None = None        # why the sandbox itself was killed (wall clock)
    exit: str | None = None          # how the sandbox process ended
    worker_error: str | None = None
    done: bool = False
    stray_processes: int = 0         # processes of the sandbox uid still alive after it (killed)
    stderr_tail: str = ""
    seconds: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _python_roots() -> list[str]:
    """Folders the worker's Python needs: its prefixes and where evalplus is installed."""
    import evalplus

    roots = {sys.base_prefix, sys.prefix, sys.exec_prefix, str(Path(evalplus.__file__).resolve().parents[1]),
             str(Path(sys.executable).resolve().parent)}
    roots = sorted(r for r in roots if r and not r.startswith(("/usr/", "/bin", "/lib")))
    # Drop any root inside another.
    return [r for r in roots if not any(r != o and r.startswith(o + "/") for o in roots)]


def _world_reachable(path: str) -> bool:
    """Every folder on the way to `path` is searchable by any uid."""
    import stat

    p = Path(path)
    for d in [p, *p.parents]:
        try:
            if not d.stat().st_mode & stat.S_IXOTH:
                return False
        except OSError:
            return False
    return True


def _system_mounts() -> list[str]:
    args: list[str] = []
    for top in ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
        p = Path(top)
        if p.is_symlink():
            args += ["--symlink", os.readlink(p), top]
        elif p.is_dir():
            args += ["--ro-bind", top, top]
    return args


def _parent_dirs(path: str, made: set[str]) -> list[str]:
    """bwrap makes missing parents of a mount point 0700: make them 0755 first, so the
    dropped uid can walk to the Python folders."""
    args: list[str] = []
    for parent in reversed(PurePosixPath(path).parents):
        p = str(parent)
        if p == "/" or p in made or p in ("/usr", "/bin", "/lib", "/lib64"):
            continue
        made.add(p)
        args += ["--perms", "0755", "--dir", p]
    return args


class Sandbox:
    _uids = itertools.count()

    def __init__(self, limits: Limits = Limits(), *, method: str = "auto"):
        """method: "auto" (bubblewrap when it works), "bubblewrap", "unshare" or "rlimits".
        RuntimeError when the chosen sandbox cannot grade a trivial sample."""
        self.limits = limits
        self.is_root = os.geteuid() == 0
        self.method, self.why = self._choose(method)
        # Outside bubblewrap the dropped uid sees the host's folders: it needs to reach Python.
        self.drop_uid = self.is_root and (self.method == "bubblewrap" or all(map(_world_reachable, _python_roots())))
        self._self_test()

    def _self_test(self) -> None:
        job = {"mode": "base-only", "code": "def f():\n    return 1\n", "entry_point": "f",
               "problem": {"test": "def check(c):\n    assert c() == 1\n"}, "time_limit": 10.0}
        out = self.run(job, wall_s=60)
        if out.phases.get("base", {}).get("status") != "pass":
            raise RuntimeError(f"the {self.method} sandbox cannot grade a trivial sample: "
                               f"{out.worker_error or out.phases or out.exit} {out.stderr_tail[-300:]}".strip())

    # -- what this machine offers ---------------------------------------------------------
    def _bwrap_args(self, scratch: str) -> list[str]:
        args = ["bwrap", "--unshare-net", "--unshare-pid", "--unshare-ipc", "--unshare-uts",
                "--unshare-cgroup-try", "--die-with-parent", "--new-session"]
        if not self.is_root:
            args.append("--unshare-user")
        args += _system_mounts()
        made: set[str] = set()
        for root in _python_roots() + [str(WORKER.parent)]:
            args += _parent_dirs(root, made) + ["--ro-bind", root, root]
        args += ["--proc", "/proc", "--dev", "/dev", "--bind", scratch, _INSIDE, "--chdir", _INSIDE, "--clearenv"]
        for k, v in self._env(_INSIDE).items():
            args += ["--setenv", k, v]
        return args

    def _env(self, scratch: str) -> dict[str, str]:
        return {"PATH": "/usr/bin:/bin", "HOME": scratch, "TMPDIR": scratch, "OPENBLAS_NUM_THREADS": "1",
                "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "PYTHONDONTWRITEBYTECODE": "1",
                "PYTHONHASHSEED": "0", "EVALPLUS_MAX_MEMORY_BYTES": str(self.limits.rlimits()["as"])}

    def _choose(self, method: str) -> tuple[str, str]:
        if method not in ("auto", "bubblewrap", "unshare", "rlimits"):
            raise ValueError(f"unknown containment {method!r}")
        tried = []
        if shutil.which("prlimit") is None:
            raise RuntimeError("prlimit (util-linux) is not installed: the sandbox sets its limits with it")
        if method in ("auto", "bubblewrap"):
            problem = self._probe([*self._bwrap_args(tempfile.gettempdir()), sys.executable, "-I", "-c",
                                   "import evalplus"]) if shutil.which("bwrap") else "bwrap is not installed"
            if problem is None:
                return "bubblewrap", "bwrap works here"
            if method == "bubblewrap":
                raise RuntimeError(f"bubblewrap containment asked for but unusable: {problem}")
            tried.append(f"bubblewrap: {problem}")
        if method in ("auto", "unshare"):
            problem = self._probe(self._unshare_prefix() + ["true"]) if shutil.which("unshare") else \
                "unshare is not installed"
            if problem is None:
                return "unshare", "; ".join(tried + ["unshare --net works here"])
            if method == "unshare":
                raise RuntimeError(f"unshare containment asked for but unusable: {problem}")
            tried.append(f"unshare: {problem}")
        return "rlimits", "; ".join(tried) or "asked for"

    def _unshare_prefix(self) -> list[str]:
        return ["unshare", "--net"] + ([] if self.is_root else ["--map-current-user"])

    @staticmethod
    def _probe(cmd: list[str]) -> str | None:
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return str(exc)
        return None if r.returncode == 0 else (r.stderr.strip().splitlines() or [f"exit {r.returncode}"])[-1]

    def describe(self) -> dict[str, Any]:
        namespaces = {"bubblewrap": ["net", "pid", "ipc", "uts", "mount"] + ([] if self.is_root else ["user"]),
                      "unshare": ["net"] + ([] if self.is_root else ["user"]), "rlimits": []}[self.method]
        return {
            "method": self.method,
            "why": self.why,
            "namespaces": namespaces,
            "network": "none (new network namespace)" if "net" in namespaces else "NOT isolated",
            "filesystem": ("read-only system and Python folders; the scratch folder the only writable place"
                           if self.method == "bubblewrap" else
                           "the host's, as " + ("a uid of its own" if self.drop_uid else "root" if self.is_root
                                                else "the invoking user") + "; writes outside refused by the hook"),
            "uid": "a uid of its own per sample (dropped from root)" if self.drop_uid else
                   "root, NOT dropped (the Python folders are not reachable by another uid): RLIMIT_NPROC does not "
                   "apply to root" if self.is_root else "the invoking user",
            "limits": asdict(self.limits),
            "audit_hook": "reports escape attempts" if self.method == "bubblewrap" else
                          "reports and refuses escape attempts (no namespaces to contain them)",
            "evalplus_guard": True,
        }

    # -- one sample -----------------------------------------------------------------------
    def run(self, job: dict[str, Any], *, wall_s: float) -> Outcome:
        """Run sandbox_worker.py on `job` (without nonce/report_fd/limits: added here)."""
        t0 = time.monotonic()
        uid = 300000 + (os.getpid() % 1000) * 1000 + next(self._uids) % 1000 if self.drop_uid else None
        scratch = tempfile.mkdtemp(prefix="ds4kit-humaneval-")
        if uid is not None:
            os.chown(scratch, uid, uid)
        nonce = secrets.token_hex(8)
        report = tempfile.TemporaryFile()
        stderr = tempfile.TemporaryFile()
        inside = _INSIDE if self.method == "bubblewrap" else scratch
        # Without bubblewrap's walls the audit hook refuses escape attempts instead of only
        # reporting them (as root without a uid of its own, RLIMIT_NPROC would not stop a fork bomb).
        job = {**job, "nonce": nonce, "report_fd": report.fileno(), "drop_uid": uid,
               "limits": self.limits.rlimits(), "block_escapes": self.method != "bubblewrap"}
        if self.method == "bubblewrap":
            cmd = self._bwrap_args(scratch)
        elif self.method == "unshare":
            cmd = self._unshare_prefix()
        else:
            cmd = []
        cmd += [sys.executable, "-I", str(WORKER)]
        # Python and numpy load before the worker lowers the address space to the sample's limit;
        # nproc is set by the worker itself (after the uid drop / inside the user namespace).
        rl = {**self.limits.rlimits(), "as": max(self.limits.rlimits()["as"], 2 << 30)}
        rl.pop("nproc")
        # prlimit sets them on the exec'd command: no preexec_fn, which is unsafe with the
        # grading threads running (a fork may copy a held lock).
        prefix = ["prlimit"] + [f"--{k}={v}" for k, v in rl.items()] + ["--"]
        cmd = prefix + cmd
        out = Outcome()
        try:
            proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=stderr,
                                    pass_fds=(report.fileno(),), cwd=scratch, start_new_session=True,
                                    env=None if self.method == "bubblewrap" else self._env(inside))
            feeder = threading.Thread(target=self._feed, args=(proc, json.dumps(job).encode()), daemon=True)
            feeder.start()
            try:
                proc.wait(timeout=wall_s)
            except subprocess.TimeoutExpired:
                out.killed = f"still running after {wall_s:.1f} s (wall-clock limit)"
                self._kill_group(proc)
                proc.wait()
            code = proc.returncode
            self._kill_group(proc)  # whatever the sample forked into the sandbox's session goes too
            out.exit = f"signal {signal.Signals(-code).name}" if code < 0 else f"exit {code}"
            if uid is not None:
                out.stray_processes = _kill_uid(uid)
            self._read_report(report, nonce, out)
            stderr.seek(0)
            out.stderr_tail = stderr.read()[-2000:].decode(errors="replace")
        finally:
            report.close()
            stderr.close()
            shutil.rmtree(scratch, ignore_errors=True)
        out.seconds = round(time.monotonic() - t0, 3)
        return out

    @staticmethod
    def _feed(proc: subprocess.Popen, data: bytes) -> None:
        try:
            proc.stdin.write(data)
            proc.stdin.close()
        except OSError:
            pass

    @staticmethod
    def _kill_group(proc: subprocess.Popen) -> None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        if proc.returncode is None:
            proc.kill()

    @staticmethod
    def _read_report(report, nonce: str, out: Outcome) -> None:
        report.seek(0)
        for raw in report.read(4 << 20).decode(errors="replace").splitlines():
            tag, _, body = raw.partition("\t")
            if tag != nonce:
                continue
            try:
                msg = json.loads(body)
            except ValueError:
                continue
            kind = msg.get("type") if isinstance(msg, dict) else None
            if kind == "syntax":
                out.syntax_error = str(msg.get("message"))
            elif kind == "event":
                out.events.append({"what": str(msg.get("what")), "detail": str(msg.get("detail"))[:300]})
            elif kind == "timeout":
                out.timeouts += 1
            elif kind == "phase" and msg.get("phase") in ("base", "plus"):
                out.phases[msg["phase"]] = {k: v for k, v in msg.items() if k not in ("type", "phase")}
            elif kind == "error":
                out.worker_error = str(msg.get("message"))
            elif kind == "done":
                out.done = True


def _uid_processes(uid: int) -> list:
    import psutil

    found = []
    for p in psutil.process_iter(["uids", "status"]):
        try:
            if p.info["uids"] and p.info["uids"].real == uid and p.info["status"] != psutil.STATUS_ZOMBIE:
                found.append(p)
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    return found


def _kill_uid(uid: int, grace_s: float = 2.0) -> int:
    """Processes of the sandbox's uid still alive `grace_s` after it ended (a PID namespace
    takes its processes down by itself, a moment later), killed; how many there were."""
    deadline = time.monotonic() + grace_s
    left = _uid_processes(uid)
    while left and time.monotonic() < deadline:
        time.sleep(0.05)
        left = _uid_processes(uid)
    for p in left:
        try:
            p.kill()
        except Exception:
            pass
    return len(left)
