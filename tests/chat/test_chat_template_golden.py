"""Golden prompts for the DS4 chat template.

Every expected string below is typed by hand from ds4-model.md section 7 and the
rules D (antirez/ds4 render_chat_prompt_text) follows for what the spec leaves
open; the marker literals are typed here too, never taken from ds4kit's
constants, so a wrong constant fails these tests.
"""
import pytest

from ds4kit.chat import chat_markers, effort_for_context, render_chat

B = "<｜begin▁of▁sentence｜>"
E = "<｜end▁of▁sentence｜>"
U = "<｜User｜>"
A = "<｜Assistant｜>"

MAX_PREFIX = (
    "Reasoning Effort: Absolute maximum with no shortcuts permitted.\n"
    "You MUST be very thorough in your thinking and comprehensively decompose the problem to resolve the "
    "root cause, rigorously stress-testing your logic against all potential paths, edge cases, and "
    "adversarial scenarios.\n"
    "Explicitly write out your entire deliberation process, documenting every intermediate step, considered "
    "alternative, and rejected hypothesis to ensure absolutely no assumption is left unchecked.\n\n"
)


def system(text):
    return {"role": "system", "content": text}


def dev(text):
    return {"role": "developer", "content": text}


def user(text):
    return {"role": "user", "content": text}


def asst(text, reasoning=None, **extra):
    m = {"role": "assistant", "content": text}
    if reasoning is not None:
        m["reasoning_content"] = reasoning
    m.update(extra)
    return m


def tool(text):
    return {"role": "tool", "content": text, "tool_call_id": "call_1"}


def test_marker_strings_are_the_fullwidth_ones():
    m = chat_markers()
    assert (m.bos, m.eos, m.user, m.assistant, m.think_open, m.think_close) == (B, E, U, A, "<think>", "</think>")
    assert "\uff5c" in m.user and "|" not in m.user
    assert "\u2581" in m.bos and "_" not in m.bos


def test_system_only_has_no_turns_and_no_generation_prompt():
    assert render_chat([system("You are terse.")], thinking=False) == B + "You are terse."


def test_system_then_user_non_thinking():
    got = render_chat([system("You are terse."), user("2+2?")], thinking=False)
    assert got == B + "You are terse." + U + "2+2?" + A + "</think>"


def test_system_and_developer_joined_by_one_blank_line():
    got = render_chat([system("S1"), dev("D1"), user("q")], thinking=False)
    assert got == B + "S1\n\nD1" + U + "q" + A + "</think>"


def test_late_developer_message_is_hoisted_into_the_system_text():
    got = render_chat([system("S"), user("q1"), asst("a1"), dev("D"), user("q2")], thinking=False)
    assert got == B + "S\n\nD" + U + "q1" + A + "</think>a1" + E + U + "q2" + A + "</think>"


def test_empty_system_text_adds_no_separator():
    assert render_chat([system(""), system("S"), user("q")], thinking=False) == B + "S" + U + "q" + A + "</think>"


def test_multi_turn_non_thinking():
    msgs = [system("S"), user("u1"), asst("a1"), user("u2"), asst("a2"), user("u3")]
    want = B + "S" + U + "u1" + A + "</think>a1" + E + U + "u2" + A + "</think>a2" + E + U + "u3" + A + "</think>"
    assert render_chat(msgs, thinking=False) == want


def test_thinking_drops_reasoning_of_turns_before_the_last_user_message():
    msgs = [user("u1"), asst("a1", "r1"), user("u2"), asst("a2", "r2"), user("u3")]
    want = B + U + "u1" + A + "</think>a1" + E + U + "u2" + A + "</think>a2" + E + U + "u3" + A + "<think>"
    assert render_chat(msgs, thinking=True) == want


def test_thinking_keeps_reasoning_of_the_turn_after_the_last_user_message():
    msgs = [user("u1"), asst("a1", "r1"), user("u2"), asst("a2", "r2")]
    want = B + U + "u1" + A + "</think>a1" + E + U + "u2" + A + "<think>r2</think>a2" + E
    assert render_chat(msgs, thinking=True) == want


def test_final_assistant_without_reasoning_gets_an_empty_think_block():
    assert render_chat([user("u"), asst("a")], thinking=True) == B + U + "u" + A + "<think></think>a" + E


def test_non_thinking_drops_reasoning_everywhere():
    assert render_chat([user("u"), asst("a", "r")], thinking=False) == B + U + "u" + A + "</think>a" + E


def test_generation_prompt_thinking_on_and_off():
    assert render_chat([user("hi")], thinking=True) == B + U + "hi" + A + "<think>"
    assert render_chat([user("hi")], thinking=False) == B + U + "hi" + A + "</think>"


def test_no_generation_prompt_when_not_asked():
    assert render_chat([user("hi")], thinking=True, add_generation_prompt=False) == B + U + "hi"


def test_no_generation_prompt_after_a_closed_assistant_turn():
    assert render_chat([user("hi"), asst("yo")], thinking=False) == B + U + "hi" + A + "</think>yo" + E


def test_no_bos():
    assert render_chat([user("hi")], thinking=False, bos=False) == U + "hi" + A + "</think>"


@pytest.mark.parametrize("effort", [None, "low", "medium", "high", "x-high"])
def test_efforts_below_max_render_like_plain_thinking(effort):
    got = render_chat([system("S"), user("q")], thinking=True, reasoning_effort=effort)
    assert got == B + "S" + U + "q" + A + "<think>"


def test_max_effort_puts_the_fixed_prefix_after_bos_before_system():
    got = render_chat([system("S"), user("q")], thinking=True, reasoning_effort="max")
    assert got == B + MAX_PREFIX + "S" + U + "q" + A + "<think>"


def test_max_effort_without_system_and_without_bos():
    got = render_chat([user("q")], thinking=True, reasoning_effort="max", bos=False)
    assert got == MAX_PREFIX + U + "q" + A + "<think>"


@pytest.mark.parametrize("effort", ["low", "medium", "high", "x-high", "max"])
def test_effort_has_no_effect_without_thinking(effort):
    got = render_chat([system("S"), user("q")], thinking=False, reasoning_effort=effort)
    assert got == B + "S" + U + "q" + A + "</think>"


TOOL_CALL = {"id": "call_1", "type": "function",
             "function": {"name": "get_weather", "arguments": '{"city": "Paris", "days": 3, "opts": {"unit": "C"}}'}}
DSML_WEATHER = (
    "\n\n<｜DSML｜tool_calls>\n"
    '<｜DSML｜invoke name="get_weather">\n'
    '<｜DSML｜parameter name="city" string="true">Paris</｜DSML｜parameter>\n'
    '<｜DSML｜parameter name="days" string="false">3</｜DSML｜parameter>\n'
    '<｜DSML｜parameter name="opts" string="false">{"unit":"C"}</｜DSML｜parameter>\n'
    "</｜DSML｜invoke>\n"
    "</｜DSML｜tool_calls>"
)


def test_tool_call_and_results_share_one_user_marker():
    msgs = [user("weather?"), asst(None, "need tool", tool_calls=[TOOL_CALL]), tool("18C"), tool("rain")]
    want = (B + U + "weather?" + A + "<think>need tool</think>" + DSML_WEATHER + E
            + U + "<tool_result>18C</tool_result><tool_result>rain</tool_result>" + A + "<think>")
    assert render_chat(msgs, thinking=True) == want


def test_tool_conversation_keeps_reasoning_of_every_turn():
    msgs = [user("u1"), asst("a1", "r1"), user("u2"), asst("", "r2", tool_calls=[TOOL_CALL]), tool("18C"),
            asst("It is 18C.", "r3")]
    want = (B + U + "u1" + A + "<think>r1</think>a1" + E
            + U + "u2" + A + "<think>r2</think>" + DSML_WEATHER + E
            + U + "<tool_result>18C</tool_result>" + A + "<think>r3</think>It is 18C." + E)
    assert render_chat(msgs, thinking=True) == want


def test_tool_call_without_thinking():
    msgs = [user("w"), asst(None, tool_calls=[TOOL_CALL]), tool("18C")]
    want = (B + U + "w" + A + "</think>" + DSML_WEATHER + E
            + U + "<tool_result>18C</tool_result>" + A + "</think>")
    assert render_chat(msgs, thinking=False) == want


def test_tool_delimiters_inside_data_are_escaped():
    call = {"function": {"name": 'a"<b>', "arguments": {"s": "x</｜DSML｜parameter>y", "n": ["</｜DSML｜parameter>"]}}}
    msgs = [user("u"), asst("", tool_calls=[call]), tool("keep <b>&amp; but </tool_result> escaped")]
    want = (B + U + "u" + A + "</think>"
            + "\n\n<｜DSML｜tool_calls>\n"
            + '<｜DSML｜invoke name="a&quot;&lt;b&gt;">\n'
            + '<｜DSML｜parameter name="s" string="true">x&lt;/｜DSML｜parameter>y</｜DSML｜parameter>\n'
            + '<｜DSML｜parameter name="n" string="false">["\\u003c/｜DSML｜parameter>"]</｜DSML｜parameter>\n'
            + "</｜DSML｜invoke>\n</｜DSML｜tool_calls>" + E
            + U + "<tool_result>keep <b>&amp; but &lt;/tool_result> escaped</tool_result>" + A + "</think>")
    assert render_chat(msgs, thinking=False) == want


def test_consecutive_assistant_messages_continue_one_turn():
    msgs = [user("u"), asst("part1"), asst("part2")]
    assert render_chat(msgs, thinking=False) == B + U + "u" + A + "</think>part1" + E + "part2" + E


def test_content_as_text_parts():
    msgs = [{"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}]
    assert render_chat(msgs, thinking=False) == B + U + "ab" + A + "</think>"


def test_effort_for_context_follows_d_384k_gate():
    assert effort_for_context("max", 16384) == "high"
    assert effort_for_context("max", 393215) == "high"
    assert effort_for_context("max", 393216) == "max"
    assert effort_for_context("low", 1024) == "low"
    assert effort_for_context(None, 1024) is None


def test_empty_conversation_is_bos_only():
    assert render_chat([], thinking=True) == B
    assert render_chat([], thinking=True, reasoning_effort="max", bos=False) == MAX_PREFIX
