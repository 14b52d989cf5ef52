"""Every GPU kernel begins with ds4_kernel_entry() (gpu_compat.h). With programmatic dependent
launch a kernel may start while the one before it in the stream still runs; only the entry's
wait keeps it from reading that kernel's output early, and a kernel that skipped it would let
its successors run ahead of its producer. A race like that shows up on a GPU as bits that
change from run to run, so it is caught here, in the source, on every machine."""
import re
from pathlib import Path

GPU_SRC = Path(__file__).resolve().parents[2] / "engine" / "src" / "backend" / "gpu"


def kernel_bodies(text: str):
    """(name, body start) of every __global__ definition (explicit instantiations skipped)."""
    for m in re.finditer(r"__global__", text):
        line = text[text.rfind("\n", 0, m.start()) + 1 : m.end()]
        if "template __global__" in line:
            continue
        paren = text.index("(", m.end())
        name = text[m.end() : paren].split()[-1]
        depth, j = 0, paren
        while True:
            depth += {"(": 1, ")": -1}.get(text[j], 0)
            if depth == 0:
                break
            j += 1
        brace = text.index("{", j)
        assert text[j + 1 : brace].strip() == "", f"unexpected text before the body of {name}"
        yield name, text[brace + 1 :]


def first_statement(body: str) -> str:
    """The body's first statement, comments and __shared__ declarations skipped."""
    body = re.sub(r"//[^\n]*", "", body)
    for stmt in body.split(";"):
        stmt = stmt.strip()
        if stmt and not stmt.startswith("__shared__"):
            return stmt
    return ""


def test_every_kernel_starts_with_the_entry():
    kernels, missing = [], []
    for path in sorted(GPU_SRC.glob("*.cu")):
        # A kernel a macro defines (gpu_attention.cu's head groups) has its lines continued.
        for name, body in kernel_bodies(path.read_text().replace("\\\n", "\n")):
            kernels.append(name)
            if first_statement(body) != "ds4_kernel_entry()":
                missing.append(f"{path.name}: {name} begins with {first_statement(body)[:60]!r}")
    assert len(kernels) >= 30, f"found only {len(kernels)} kernels: the parser lost some"
    assert not missing, "kernels that do not begin with ds4_kernel_entry():\n" + "\n".join(missing)


def test_the_check_sees_a_missing_entry():
    text = "extern \"C\" __global__ void k(int* p) {\n    __shared__ int s;\n    *p = 1;\n}\n"
    [(name, body)] = list(kernel_bodies(text))
    assert name == "k" and first_statement(body) == "*p = 1"
