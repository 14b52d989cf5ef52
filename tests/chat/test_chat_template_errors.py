"""Bad chat input gives a ValueError that names the message index and the field."""
import pytest

from ds4kit.chat import render_chat


def err(messages, **kw):
    kw.setdefault("thinking", False)
    with pytest.raises(ValueError) as info:
        render_chat(messages, **kw)
    return str(info.value)


def test_unknown_role():
    msg = err([{"role": "user", "content": "a"}, {"role": "function", "content": "x"}])
    assert "messages[1].role" in msg and "'function'" in msg and "developer" in msg


def test_missing_role():
    assert "messages[0].role" in err([{"content": "x"}])


def test_missing_content():
    assert "messages[0].content: missing" in err([{"role": "user"}])


def test_null_content_allowed_only_with_tool_calls():
    assert "messages[1].content" in err([{"role": "user", "content": "q"}, {"role": "assistant", "content": None}])


def test_reasoning_on_a_user_message():
    msg = err([{"role": "user", "content": "q", "reasoning_content": "r"}])
    assert "messages[0].reasoning_content" in msg and "'user'" in msg


def test_reasoning_must_be_text():
    assert "messages[1].reasoning_content" in err(
        [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a", "reasoning_content": 3}])


def test_tool_calls_on_a_tool_message():
    assert "messages[0].tool_calls" in err([{"role": "tool", "content": "x", "tool_calls": []}])


def test_tool_call_arguments_not_json():
    call = {"type": "function", "function": {"name": "f", "arguments": "{oops"}}
    msg = err([{"role": "user", "content": "q"}, {"role": "assistant", "content": "", "tool_calls": [call]}])
    assert "messages[1].tool_calls[0].function.arguments" in msg and "not valid JSON" in msg


def test_tool_call_arguments_not_an_object():
    call = {"function": {"name": "f", "arguments": "[1, 2]"}}
    msg = err([{"role": "user", "content": "q"}, {"role": "assistant", "content": "", "tool_calls": [call]}])
    assert "messages[1].tool_calls[0].function.arguments" in msg and "JSON object" in msg


def test_tool_call_without_name():
    call = {"function": {"arguments": "{}"}}
    assert "tool_calls[0].function.name" in err([{"role": "assistant", "content": "", "tool_calls": [call]}])


def test_unknown_field_is_not_silently_dropped():
    msg = err([{"role": "assistant", "content": "a", "reasoning": "typo for reasoning_content"}])
    assert "messages[0]" in msg and "'reasoning'" in msg


def test_non_text_content_part():
    msg = err([{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}])
    assert "messages[0].content[0]" in msg


def test_message_not_a_dict():
    assert "messages[0]" in err(["hello"])


def test_messages_not_a_list():
    assert "messages" in err({"role": "user", "content": "x"})


def test_unknown_reasoning_effort_lists_the_valid_ones():
    msg = err([{"role": "user", "content": "q"}], thinking=True, reasoning_effort="xhigh")
    assert "reasoning_effort" in msg and "x-high" in msg and "max" in msg


def test_thinking_must_be_a_bool():
    assert "thinking" in err([{"role": "user", "content": "q"}], thinking="high")
