"""One sample's verdict: pass/fail and its category in the failure taxonomy.

Categories, first match wins for a sample that did not pass:
  truncated          generation stopped at the token budget (the code never finished)
  contained_escape   the sample tried to get out (fork, socket, write outside its folder,
                     allocation past the memory limit, ...) or had to be killed by the sandbox
                     rather than by a test's own time limit; a sample that tries to escape
                     gets no credit even if its tests pass
  syntax_error       it does not compile (smart_quotes: with typographic quotes in the code)
  timeout            a test ran past evalplus's time limit
  crash              the test process died (a signal, no verdict, the harness failed)
  base_failure       a base (original HumanEval) test failed
  plus_only_failure  every base test passed, a HumanEval+ test failed
"""
from __future__ import annotations

from typing import Any

from ds4kit.evals.humaneval.sandbox import Outcome

CATEGORIES = ("pass", "truncated", "contained_escape", "syntax_error", "timeout", "crash", "base_failure",
              "plus_only_failure")
SMART_QUOTES = "\u2018\u2019\u201c\u201d\u00ab\u00bb\u201e\u201a"


def _escape(outcome: Outcome) -> str | None:
    reasons = [e["what"] for e in outcome.events]
    if outcome.killed:
        reasons.append(f"killed by the sandbox: {outcome.killed}")
    for name, phase in outcome.phases.items():
        if phase.get("status") == "killed":
            reasons.append(f"{name} tests killed: {phase.get('why')}")
    if outcome.exit in ("signal SIGXCPU", "signal SIGXFSZ"):
        reasons.append(f"hit a resource limit ({outcome.exit})")
    if outcome.stray_processes:
        reasons.append(f"{outcome.stray_processes} processes outlived it")
    return "; ".join(dict.fromkeys(reasons)) or None


def _failed_test(name: str, phase: dict[str, Any]) -> str:
    if phase.get("why"):
        return str(phase["why"])
    return f"a {name} test failed after {phase.get('passed')} of {phase.get('tests')} passed"


def classify(outcome: Outcome, *, code: str, truncated: bool, base_only: bool) -> dict[str, Any]:
    """{"base": pass/fail, "plus": pass/fail/None, "status": pass/fail, "category", "detail"}."""
    base = outcome.phases.get("base", {}).get("status")
    plus = None if base_only else outcome.phases.get("plus", {}).get("status")
    base_ok = base == "pass"
    plus_ok = base_ok if base_only else (base_ok and plus == "pass")
    escape = _escape(outcome)
    verdict = {"base": "pass" if base_ok and not escape else "fail",
               "plus": None if base_only else ("pass" if plus_ok and not escape else "fail")}
    passed = plus_ok and not escape
    category, detail = "pass", None
    if not passed:
        if truncated:
            category, detail = "truncated", "generation hit its token budget"
        elif escape:
            category, detail = "contained_escape", escape
        elif outcome.syntax_error is not None:
            quotes = sorted(set(c for c in code if c in SMART_QUOTES))
            category = "syntax_error"
            detail = outcome.syntax_error + (f" (smart quotes: {' '.join(quotes)})" if quotes else "")
        elif outcome.timeouts or "timeout" in (base, plus):
            category, detail = "timeout", "a test ran past its time limit"
        elif outcome.worker_error or not outcome.done or "crash" in (base, plus) or base is None:
            category = "crash"
            detail = (outcome.worker_error or next((p.get("why") for p in outcome.phases.values()
                                                    if p.get("status") == "crash"), None)
                      or f"no verdict ({outcome.exit})")
        elif not base_ok:
            category, detail = "base_failure", _failed_test("base", outcome.phases["base"])
        else:
            category = "plus_only_failure"
            detail = "every base test passed; " + _failed_test("plus", outcome.phases.get("plus", {}))
    return {"status": "pass" if passed else "fail", **verdict, "category": category, "detail": detail,
            "smart_quotes": any(c in SMART_QUOTES for c in code)}
