"""DeepSeek V4 chat template and marker strings (ds4-model.md section 7)."""
from ds4kit.chat.markers import (
    ASSISTANT,
    BOS,
    EOS,
    THINK_CLOSE,
    THINK_MAX_MIN_CONTEXT,
    THINK_MAX_PREFIX,
    THINK_OPEN,
    USER,
    ChatMarkers,
    chat_markers,
)
from ds4kit.chat.template import REASONING_EFFORTS, ROLES, effort_for_context, render_chat

__all__ = [
    "ASSISTANT",
    "BOS",
    "EOS",
    "REASONING_EFFORTS",
    "ROLES",
    "THINK_CLOSE",
    "THINK_MAX_MIN_CONTEXT",
    "THINK_MAX_PREFIX",
    "THINK_OPEN",
    "USER",
    "ChatMarkers",
    "chat_markers",
    "effort_for_context",
    "render_chat",
]
