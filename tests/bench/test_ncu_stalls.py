"""scripts/ncu-stalls summarises Nsight Compute's source page (CSV): the samples by stall reason,
the share of the kernel's first instructions and the top instructions, from a table whose
answers are known by construction."""
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "ncu-stalls"

HEADER = ['Address', 'Source', 'Warp Stall Sampling (All Samples)', 'Warp Stall Sampling (Not-issued Samples)',
          'Instructions Executed', 'stall_long_sb', 'stall_wait', 'stall_math', 'stall_long_sb (Not Issued)']


def table(name: str, rows) -> str:
    def line(cells):
        return ",".join('"' + str(c) + '"' for c in cells)
    out = ['"Kernel Name","' + name + '",', line(HEADER)]
    for i, (src, samples, long_sb, wait, math) in enumerate(rows):
        out.append(line([hex(0x100 + 16 * i), src, samples, 0, "1,024", long_sb, wait, math, 99]))
    return "\n".join(out) + "\n"


def run(*args):
    return subprocess.run([sys.executable, str(SCRIPT), *map(str, args)], capture_output=True, text=True)


def test_reasons_head_and_top_instructions(tmp_path):
    rows = [("LDG.E R0", 10, 6, 4, 0), ("IMAD R1", 30, 0, 30, 0), ("LOP3.LUT R2", 50, 45, 0, 5),
            ("FFMA R3", 10, 0, 0, 10)]
    f = tmp_path / "k.csv"
    f.write_text("==PROF== noise before the table\n" + table("void k<1>(int)", rows) + table("void j()", rows[:1]))
    r = run(f, "--head", 2, "--top", 2)
    assert r.returncode == 0, r.stderr
    first, second = r.stdout.split("\n\n")[:2]
    assert "100 samples, 4096 warp instructions executed, 4 in the SASS" in first
    # long_sb 51 of 100, wait 34, math 15; the Not Issued column is not a reason of its own.
    assert "by reason: long_sb 51%, wait 34%, math 15%" in first
    assert "first 2 instructions: 40.0% of samples" in first
    top = [l for l in first.splitlines() if l.strip().startswith("#")]
    assert len(top) == 2 and "LOP3.LUT R2" in top[0] and "50.0%" in top[0] and "IMAD R1" in top[1]
    assert "void j()" in second and "10 samples" in second


def test_errors_name_what_is_missing(tmp_path):
    f = tmp_path / "none.csv"
    f.write_text("==PROF== no table\n")
    r = run(f)
    assert r.returncode == 1 and "no source table in" in r.stderr
    g = tmp_path / "cols.csv"
    g.write_text('"Kernel Name","void k()",\n"Address","Source","Instructions Executed"\n"0x1","NOP","1"\n')
    r = run(g)
    assert r.returncode != 0 and "Warp Stall Sampling (All Samples)" in r.stderr
    r = run(tmp_path / "absent.csv")
    assert r.returncode != 0 and "cannot read" in r.stderr and "absent.csv" in r.stderr
