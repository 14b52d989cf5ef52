"""DeepSeek V4 chat marker strings (ds4-model.md section 7).

The special tokens are spelled with U+FF5C FULLWIDTH VERTICAL LINE and U+2581
LOWER ONE EIGHTH BLOCK, not ASCII '|' and '_'. They are built from named code
points here so an editor or a copy-paste can never silently turn them into the
ASCII look-alikes (which tokenize as several ordinary tokens: seed defect 2's
marker confusion started the same way).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

FW_BAR = "\uff5c"  # ｜
LOW_BLOCK = "\u2581"  # ▁


def _special(*words: str) -> str:
    return "<" + FW_BAR + LOW_BLOCK.join(words) + FW_BAR + ">"


BOS = _special("begin", "of", "sentence")
EOS = _special("end", "of", "sentence")
USER = _special("User")
ASSISTANT = _special("Assistant")
THINK_OPEN = "<think>"
THINK_CLOSE = "</think>"

# Tool calls (DSML) as D writes them; "｜DSML｜" is one special token.
DSML = FW_BAR + "DSML" + FW_BAR
TOOL_CALLS_OPEN = "<" + DSML + "tool_calls>"
TOOL_CALLS_CLOSE = "</" + DSML + "tool_calls>"
INVOKE_OPEN = "<" + DSML + "invoke"
INVOKE_CLOSE = "</" + DSML + "invoke>"
PARAMETER_OPEN = "<" + DSML + "parameter"
PARAMETER_CLOSE = "</" + DSML + "parameter>"
TOOL_RESULT_OPEN = "<tool_result>"
TOOL_RESULT_CLOSE = "</tool_result>"

# D (antirez/ds4, DS4_REASONING_EFFORT_MAX_PREFIX) places this fixed text right
# after BOS and before the system text when reasoning effort is "max". It is
# model-facing text the model was trained on, so it must stay byte-exact; it
# ends with a blank line that separates it from the system prompt.
THINK_MAX_PREFIX = (
    "Reasoning Effort: Absolute maximum with no shortcuts permitted.\n"
    "You MUST be very thorough in your thinking and comprehensively decompose the problem "
    "to resolve the root cause, rigorously stress-testing your logic against all potential "
    "paths, edge cases, and adversarial scenarios.\n"
    "Explicitly write out your entire deliberation process, documenting every intermediate "
    "step, considered alternative, and rejected hypothesis to ensure absolutely no assumption "
    "is left unchecked.\n\n"
)

# D (DS4_THINK_MAX_MIN_CONTEXT) downgrades "max" to "high" below a 384K context,
# following DeepSeek's advice that Think Max needs at least that much room.
THINK_MAX_MIN_CONTEXT = 384 * 1024


@dataclass(frozen=True)
class ChatMarkers:
    """Marker strings a prefix cache needs to find turn boundaries in a rendered prompt."""

    bos: str = BOS
    eos: str = EOS
    user: str = USER
    assistant: str = ASSISTANT
    think_open: str = THINK_OPEN
    think_close: str = THINK_CLOSE

    def as_dict(self) -> dict[str, str]:
        return asdict(self)


def chat_markers() -> ChatMarkers:
    return ChatMarkers()
