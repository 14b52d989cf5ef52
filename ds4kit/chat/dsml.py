"""Assistant tool calls rendered as DeepSeek DSML, the way D writes them.

Followed: antirez/ds4 ds4_server.c (append_dsml_tool_calls_text,
append_dsml_arg, append_dsml_attr_escaped, append_dsml_parameter_text,
append_tool_result_text). The layout is

    \\n\\n<｜DSML｜tool_calls>\\n
    <｜DSML｜invoke name="NAME">\\n
    <｜DSML｜parameter name="KEY" string="true">raw text</｜DSML｜parameter>\\n
    <｜DSML｜parameter name="KEY" string="false">{"json":1}</｜DSML｜parameter>\\n
    </｜DSML｜invoke>\\n
    </｜DSML｜tool_calls>

String arguments are written raw (string="true"); every other JSON value is
written as compact JSON (string="false"). Only the closing delimiters are
escaped, because tool data must reach the model byte for byte.

Tool results: D revisions disagree. ds4_server.c at 0025dd3e entity-escapes
'&', '<' and '>' inside <tool_result>; a later revision keeps tool output raw
("tool output is data", so read-file and shell output reach the model intact)
and escapes only a literal "</tool_result>" as "&lt;/tool_result>". We follow
the later one. Results are rendered in message order (D's per-call ordering
hook is unused in its DeepSeek path too).

Where we differ from D, on purpose: D falls back to one raw "arguments"
parameter when the arguments are not a JSON object; we reject that input with
a ValueError instead. D copies non-string JSON values minified from the request
text; we re-serialise the parsed value (compact separators, no ASCII escaping),
which differs only for unusual spellings such as 1e5 or duplicate keys.
"""
from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ds4kit.chat.markers import (
    INVOKE_CLOSE,
    INVOKE_OPEN,
    PARAMETER_CLOSE,
    PARAMETER_OPEN,
    TOOL_CALLS_CLOSE,
    TOOL_CALLS_OPEN,
    TOOL_RESULT_CLOSE,
)


def escape_attr(text: str) -> str:
    return (text.replace("&", "&amp;").replace("<", "&lt;")
            .replace(">", "&gt;").replace('"', "&quot;"))


def escape_tool_result(text: str) -> str:
    # Only the wrapper's own closing tag could end the result early.
    return text.replace(TOOL_RESULT_CLOSE, "&lt;" + TOOL_RESULT_CLOSE[1:])


def _escape_string_param(text: str) -> str:
    return text.replace(PARAMETER_CLOSE, "&lt;" + PARAMETER_CLOSE[1:])


def _escape_json_param(text: str) -> str:
    return text.replace(PARAMETER_CLOSE, "\\u003c" + PARAMETER_CLOSE[1:])


def parse_arguments(arguments: Any, where: str) -> dict[str, Any]:
    """The call's arguments as a dict; a JSON string must decode to an object."""
    if isinstance(arguments, Mapping):
        return dict(arguments)
    if not isinstance(arguments, str):
        raise ValueError(f"{where}: expected a JSON object string or a dict, got {type(arguments).__name__}")
    try:
        value = json.loads(arguments)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{where}: not valid JSON ({exc.msg} at char {exc.pos})") from None
    if not isinstance(value, dict):
        raise ValueError(f"{where}: must decode to a JSON object, got {type(value).__name__}")
    return value


def render_tool_calls(calls: list[tuple[str, dict[str, Any]]]) -> str:
    """DSML block for validated (name, arguments) pairs; '' when there are none."""
    if not calls:
        return ""
    parts = ["\n\n", TOOL_CALLS_OPEN, "\n"]
    for name, args in calls:
        parts += [INVOKE_OPEN, ' name="', escape_attr(name), '">\n']
        for key, value in args.items():
            is_string = isinstance(value, str)
            if is_string:
                body = _escape_string_param(value)
            else:
                body = _escape_json_param(json.dumps(value, ensure_ascii=False, separators=(",", ":")))
            parts += [PARAMETER_OPEN, ' name="', escape_attr(str(key)), '" string="',
                      "true" if is_string else "false", '">', body, PARAMETER_CLOSE, "\n"]
        parts += [INVOKE_CLOSE, "\n"]
    parts.append(TOOL_CALLS_CLOSE)
    return "".join(parts)
