"""evalplus's chat prompt for a HumanEval problem, and the code taken back out of a reply.

The instruction and the start of the reply are evalplus's (evalplus.codegen, the chat path of
make_raw_chat_prompt); the chat template is the target's (target.render_chat), and the reply's
opening is put after the rendered prompt as evalplus does, so the model continues inside the
code block."""
from __future__ import annotations

from typing import Any

# evalplus.codegen's instruction and response prefixes (the default, non-"perf" prompts).
INSTRUCTION = ("Please provide a self-contained Python script that solves the following problem in a markdown "
               "code block:")
RESPONSE = "Below is a Python script with a self-contained function that solves the problem and passes corresponding tests:"


def user_message(task_prompt: str) -> str:
    return f"{INSTRUCTION}\n```\n{task_prompt.strip()}\n```\n"


def reply_opening() -> str:
    return f"{RESPONSE}\n```python\n"


def render(target: Any, task_prompt: str, *, thinking: bool, effort: str | None) -> str:
    """The prompt text: chat template with the user turn, then evalplus's reply opening. With
    thinking the opening follows the model's reasoning instead (the model writes it)."""
    text = target.render_chat([{"role": "user", "content": user_message(task_prompt)}], thinking=thinking,
                              effort=effort)
    return text if thinking else text + reply_opening()


def reply_part(output: str, *, thinking: bool) -> str:
    """The visible reply: what follows </think> when thinking (nothing if it never closed)."""
    from ds4kit.chat.markers import THINK_CLOSE

    if not thinking:
        return output
    head, sep, tail = output.partition(THINK_CLOSE)
    return tail if sep else ""


def extract_solution(output: str, entry_point: str, *, thinking: bool) -> str:
    """evalplus's sanitiser over the reply (its code-block extraction and dependency pruning).
    Without thinking the reply continues the opened ```python block, so the opening is put back
    first for the sanitiser to find the block."""
    from evalplus.sanitize import sanitize

    reply = reply_part(output, thinking=thinking)
    if not thinking:
        reply = reply_opening() + reply
    code = sanitize(reply, entry_point)
    return code
