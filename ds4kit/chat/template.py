"""The DeepSeek V4 chat template (ds4-model.md section 7), rendered as D does.

Followed for the details the spec leaves open: antirez/ds4 ds4_server.c
(render_chat_prompt_text, role_is_system, role_is_user_like,
chat_history_uses_tool_context, think_mode_from_enabled,
parse_reasoning_effort_name) and ds4.c (DS4_REASONING_EFFORT_MAX_PREFIX,
DS4_THINK_MAX_MIN_CONTEXT). Our own words, not their code.

Rendering, in order:

* BOS (unless ``bos=False``).
* With thinking on and ``reasoning_effort="max"``: the fixed Think-Max prefix.
* The system text: every system *and developer* message (D treats "developer"
  exactly as "system"), wherever it appears in the list, joined by one blank
  line, in order.
* Each user turn: ``<｜User｜>`` + content.
* Tool results: ``<tool_result>content</tool_result>``; a run of consecutive
  tool messages shares one ``<｜User｜>`` marker (a tool result is a user turn).
* Each assistant turn that follows a user/tool turn: ``<｜Assistant｜>``, then
  ``<think>reasoning</think>`` when thinking is on and the turn is kept with
  its reasoning, else ``</think>``; then content, DSML tool calls, EOS.
  Reasoning is kept for turns after the last user/tool message and dropped
  (only ``</think>``) for earlier turns; but when the conversation uses tools
  (a tool message or an assistant tool call) every turn keeps its reasoning,
  because D replays tool loops with their thinking intact. An assistant
  message that directly follows another assistant message continues the same
  turn: D writes no marker for it, only its content and EOS.
* Generation prompt, when the conversation ends in a user/tool turn and
  ``add_generation_prompt`` is true: ``<｜Assistant｜>`` then ``<think>``
  (thinking) or ``</think>`` (not). After a closed assistant turn D writes
  none, and neither do we.

Message fields: ``role``, ``content`` (a string or a list of text parts),
``reasoning_content`` (assistant only), ``tool_calls`` (assistant only, OpenAI
shape, rendered as DSML, see ``ds4kit.chat.dsml``), and ``tool_call_id`` /
``name``, which are accepted and not rendered (D renders neither). Any other
field is an error rather than silently dropped. Tool *schemas* (D's "## Tools"
system block) are not rendered: callers that need them must add that text to
the system message themselves.

Reasoning effort: D has only three prompt states, none / high / max. Every
effort below "max" renders exactly like "high"; the tiers differ only in the
thinking budget the caller enforces (see ``ds4kit.cards``). Without thinking
the effort has no effect on the prompt (D's think_mode_from_enabled). D also
turns "max" into "high" when the context is below 384K tokens; ``render_chat``
has no context size, so callers apply ``effort_for_context`` first.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ds4kit.chat.dsml import escape_tool_result, parse_arguments, render_tool_calls
from ds4kit.chat.markers import (
    ASSISTANT,
    BOS,
    EOS,
    THINK_CLOSE,
    THINK_MAX_MIN_CONTEXT,
    THINK_MAX_PREFIX,
    THINK_OPEN,
    TOOL_RESULT_CLOSE,
    TOOL_RESULT_OPEN,
    USER,
)

ROLES = ("system", "developer", "user", "assistant", "tool")
REASONING_EFFORTS = ("low", "medium", "high", "x-high", "max")
_KNOWN_KEYS = frozenset({"role", "content", "reasoning_content", "tool_calls", "tool_call_id", "name"})


@dataclass
class _Message:
    role: str
    content: str
    reasoning: str | None = None
    tool_calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)


def _content_text(value: Any, where: str) -> str:
    """OpenAI content: a string, or a list of text parts (joined as D does)."""
    if isinstance(value, str):
        return value
    if isinstance(value, Sequence) and not isinstance(value, (bytes, bytearray)):
        pieces = []
        for j, part in enumerate(value):
            if isinstance(part, str):
                pieces.append(part)
            elif isinstance(part, Mapping) and part.get("type", "text") == "text" and isinstance(part.get("text"), str):
                pieces.append(part["text"])
            else:
                raise ValueError(f"{where}[{j}]: only text parts are supported, got {part!r:.80}")
        return "".join(pieces)
    raise ValueError(f"{where}: expected a string or a list of text parts, got {type(value).__name__}")


def _tool_calls(value: Any, where: str) -> list[tuple[str, dict[str, Any]]]:
    if not isinstance(value, Sequence) or isinstance(value, (str, bytes)):
        raise ValueError(f"{where}: expected a list of tool calls, got {type(value).__name__}")
    calls = []
    for j, call in enumerate(value):
        here = f"{where}[{j}]"
        if not isinstance(call, Mapping):
            raise ValueError(f"{here}: expected a dict, got {type(call).__name__}")
        if call.get("type", "function") != "function":
            raise ValueError(f"{here}.type: only 'function' tool calls exist, got {call.get('type')!r}")
        fn = call.get("function")
        if not isinstance(fn, Mapping):
            raise ValueError(f"{here}.function: missing or not a dict")
        name = fn.get("name")
        if not isinstance(name, str) or not name:
            raise ValueError(f"{here}.function.name: missing or empty")
        if "arguments" not in fn:
            raise ValueError(f"{here}.function.arguments: missing")
        calls.append((name, parse_arguments(fn["arguments"], f"{here}.function.arguments")))
    return calls


def _validate(i: int, msg: Any) -> _Message:
    where = f"messages[{i}]"
    if not isinstance(msg, Mapping):
        raise ValueError(f"{where}: expected a dict with 'role' and 'content', got {type(msg).__name__}")
    role = msg.get("role")
    if role not in ROLES:
        raise ValueError(f"{where}.role: unknown role {role!r}; expected one of {', '.join(ROLES)}")
    unknown = sorted(set(msg) - _KNOWN_KEYS)
    if unknown:
        raise ValueError(f"{where}: unknown field(s) {', '.join(map(repr, unknown))}; "
                         f"known: {', '.join(sorted(_KNOWN_KEYS))}")
    reasoning = msg.get("reasoning_content")
    if reasoning is not None:
        if role != "assistant":
            raise ValueError(f"{where}.reasoning_content: only assistant messages carry reasoning (role is {role!r})")
        if not isinstance(reasoning, str):
            raise ValueError(f"{where}.reasoning_content: expected a string, got {type(reasoning).__name__}")
    calls: list[tuple[str, dict[str, Any]]] = []
    if msg.get("tool_calls") is not None:
        if role != "assistant":
            raise ValueError(f"{where}.tool_calls: only assistant messages make tool calls (role is {role!r})")
        calls = _tool_calls(msg["tool_calls"], f"{where}.tool_calls")
    content = msg.get("content")
    if content is None:
        # OpenAI lets an assistant turn that only calls tools omit its text.
        if not calls:
            raise ValueError(f"{where}.content: missing (only an assistant message with tool_calls may omit it)")
        content = ""
    return _Message(role, _content_text(content, f"{where}.content"), reasoning, calls)


def check_reasoning_effort(effort: str | None) -> str | None:
    if effort is None or effort in REASONING_EFFORTS:
        return effort
    raise ValueError(f"reasoning_effort: unknown value {effort!r}; expected one of {', '.join(REASONING_EFFORTS)} or None")


def effort_for_context(effort: str | None, max_ctx: int) -> str | None:
    """D's context gate: "max" becomes "high" when the context is below 384K tokens."""
    effort = check_reasoning_effort(effort)
    if effort == "max" and max_ctx < THINK_MAX_MIN_CONTEXT:
        return "high"
    return effort


def render_chat(messages: Sequence[Mapping[str, Any]], *, thinking: bool, reasoning_effort: str | None = None,
                add_generation_prompt: bool = True, bos: bool = True) -> str:
    """Render OpenAI-style messages as one DeepSeek V4 prompt string (rules in the module docstring).

    Bad input raises ValueError naming the message index and field.
    """
    if not isinstance(thinking, bool):
        raise ValueError(f"thinking: expected True or False, got {thinking!r}")
    effort = check_reasoning_effort(reasoning_effort)
    if isinstance(messages, (str, bytes, Mapping)) or not isinstance(messages, Sequence):
        raise ValueError(f"messages: expected a list of message dicts, got {type(messages).__name__}")
    msgs = [_validate(i, m) for i, m in enumerate(messages)]

    uses_tools = any(m.role == "tool" or m.tool_calls for m in msgs)
    last_user = max((i for i, m in enumerate(msgs) if m.role in ("user", "tool")), default=-1)
    system = ""
    for m in msgs:
        if m.role in ("system", "developer"):
            # D adds the separator only after non-empty text, so empty parts vanish.
            system += ("\n\n" if system else "") + m.content

    out = [BOS] if bos else []
    if thinking and effort == "max":
        out.append(THINK_MAX_PREFIX)
    out.append(system)

    awaiting_reply = False  # a user/tool turn is open and the next assistant answers it
    in_tool_results = False
    for i, m in enumerate(msgs):
        if m.role in ("system", "developer"):
            continue
        if m.role == "user":
            out += [USER, m.content]
            awaiting_reply, in_tool_results = True, False
        elif m.role == "tool":
            if not in_tool_results:
                out.append(USER)
            out += [TOOL_RESULT_OPEN, escape_tool_result(m.content), TOOL_RESULT_CLOSE]
            awaiting_reply, in_tool_results = True, True
        else:  # assistant
            if awaiting_reply:
                out.append(ASSISTANT)
                if thinking and (uses_tools or i > last_user):
                    out += [THINK_OPEN, m.reasoning or "", THINK_CLOSE]
                else:
                    out.append(THINK_CLOSE)
            out += [m.content, render_tool_calls(m.tool_calls), EOS]
            awaiting_reply, in_tool_results = False, False

    if awaiting_reply and add_generation_prompt:
        out += [ASSISTANT, THINK_OPEN if thinking else THINK_CLOSE]
    return "".join(out)
