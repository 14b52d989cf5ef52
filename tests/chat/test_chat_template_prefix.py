"""How consecutive turns' prompts share a prefix: what a prefix cache can reuse.

Without thinking, the next turn's prompt extends the previous prompt plus the
generated reply exactly. With thinking, the previous turn's reasoning is dropped
once a new user message follows, so the shared prefix ends right after that
turn's <｜Assistant｜> marker.
"""
from hypothesis import given, settings
from hypothesis import strategies as st

from ds4kit.chat import chat_markers, render_chat

M = chat_markers()
text = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="<>｜"), max_size=30)


@st.composite
def histories(draw):
    msgs = []
    if draw(st.booleans()):
        msgs.append({"role": "system", "content": draw(text)})
    for _ in range(draw(st.integers(0, 3))):
        msgs.append({"role": "user", "content": draw(text)})
        msgs.append({"role": "assistant", "content": draw(text), "reasoning_content": draw(text)})
    msgs.append({"role": "user", "content": draw(text)})
    return msgs


@settings(max_examples=150, deadline=None)
@given(histories(), text, text, text)
def test_non_thinking_next_prompt_extends_previous_prompt_plus_reply(history, reply, reasoning, next_user):
    before = render_chat(history, thinking=False)
    after = render_chat(history + [{"role": "assistant", "content": reply, "reasoning_content": reasoning},
                                   {"role": "user", "content": next_user}], thinking=False)
    assert after.startswith(before + reply + M.eos + M.user + next_user)


@settings(max_examples=150, deadline=None)
@given(histories(), text, text, text)
def test_thinking_next_prompt_shares_prefix_up_to_the_assistant_marker(history, reply, reasoning, next_user):
    before = render_chat(history, thinking=True)
    assert before.endswith(M.assistant + M.think_open)
    after = render_chat(history + [{"role": "assistant", "content": reply, "reasoning_content": reasoning},
                                   {"role": "user", "content": next_user}], thinking=True)
    shared = before[: -len(M.think_open)]
    assert after.startswith(shared + M.think_close + reply + M.eos + M.user + next_user)
