"""The probe's own oracles, on hand-built token streams: the ideal reuse is the longest common prefix
with any earlier stream (prompts and generated tokens alike), and the reachable reuse follows the
documented snapshot rule (after each <User>, before a final <think>, the ends of each prompt and
generation, and a rewind of at most 32 positions). Also the verdict: a differing answer or a
reuse off the rule fails it."""
from ds4kit.probes.prefix_cache.reuse import Stream, common_prefix, ideal_reuse, reachable_reuse
from ds4kit.probes.prefix_cache.verdict import join_arms, verdict

U, T = 900, 901   # stand-ins for <｜User｜> and <think>


def test_common_prefix_by_hand():
    assert common_prefix([], [1, 2]) == 0
    assert common_prefix([1, 2, 3], [1, 2, 4]) == 2
    assert common_prefix([1, 2], [1, 2, 3]) == 2
    assert common_prefix([5], [6]) == 0


def test_ideal_reuse_counts_generated_tokens_and_takes_the_best_stream():
    a = Stream(prompt=[1, U, 2, 3], generated=[7, 8, 9])
    b = Stream(prompt=[1, U, 2, 4, 4], generated=[])
    assert ideal_reuse([1, U, 2, 3, 7, 8, 0], [a, b]) == 6          # into a's generated tokens
    assert ideal_reuse([1, U, 2, 4, 4, 4], [a, b]) == 5             # b is the longer match
    assert ideal_reuse([2, 2], [a, b]) == 0
    assert ideal_reuse([1, U], []) == 0                             # nothing processed before


def test_reachable_reuse_follows_the_snapshot_rule():
    body = list(range(10, 110))                                     # a 100-token message
    first = Stream(prompt=[1, U] + body + [2], generated=[50, 51, 52])
    n1 = len(first.prompt)
    # The whole previous stream and more: the end-of-generation snapshot, exactly.
    nxt = first.tokens + [3, U, 60, 2]
    assert reachable_reuse(nxt, [first], U, T) == ideal_reuse(nxt, [first]) == n1 + 3
    # A reply re-tokenised differently 2 tokens from its end: rewound from the end of generation.
    re_tok = first.prompt + [50, 99, 3, U, 60, 2]
    assert reachable_reuse(re_tok, [first], U, T) == ideal_reuse(re_tok, [first]) == n1 + 1
    # Without the generation fed there is no state past the prompt's end: that is the most it reaches.
    unfed = Stream(first.prompt, first.generated, generation_fed=False)
    assert reachable_reuse(re_tok, [unfed], U, T) == n1


def test_an_edit_inside_a_long_message_is_out_of_reach_but_near_a_snapshot_is_not():
    body = list(range(10, 110))
    first = Stream(prompt=[1, U] + body + [2], generated=[50, 51])
    early = [1, U] + body[:40] + [7] + body[41:] + [2]              # edited 40 tokens into the message
    assert ideal_reuse(early, [first]) == 42
    assert reachable_reuse(early, [first], U, T) == 2               # just after <User>
    late = [1, U] + body[:95] + [7] + body[96:] + [2]               # 7 tokens before the prompt's end
    assert reachable_reuse(late, [first], U, T) == ideal_reuse(late, [first]) == 97   # rewound from the end


def test_the_whole_prompt_again_and_a_thinking_prompt():
    p = [1, U, 5, 6, 2, T]
    s = Stream(prompt=p, generated=[40, 41], thinking=True)
    assert reachable_reuse(p, [s], U, T) == 6                       # the end of the prompt kept its logits
    dropped = [1, U, 5, 6, 2, 777, 42]                              # the next rendering replaces <think>
    assert ideal_reuse(dropped, [s]) == reachable_reuse(dropped, [s], U, T) == 5
    # A prompt that is a strict prefix of a stream with no state there: the last token is fed again.
    assert reachable_reuse([1, U, 5, 6], [Stream([1, U, 5, 6, 2], [])], U, T) == 3


def _row(i, actual, expected, reachable, ids_on, ids_off):
    on = {"id": f"c/{i}", "conversation": "c", "turn": i, "message_index": i, "prompt_tokens": 100,
          "output_tokens": len(ids_on), "stop": "max_tokens", "expected_reuse": expected,
          "reachable_reuse": reachable, "actual_reuse": actual, "reuse_tier": "memory", "restore_s": 0.01,
          "prefilled_tokens": 100 - actual, "snapshots_at": [], "prefill_s": 0.1, "ids": ids_on, "text": ""}
    off = dict(on, ids=ids_off, prefill_s=1.0)
    return on, off


def test_verdict_fails_on_a_differing_answer_or_a_reuse_off_the_rule():
    good = [_row(1, 0, 0, 0, [1, 2], [1, 2]), _row(2, 90, 90, 90, [3], [3])]
    rows = join_arms([a for a, _ in good], [b for _, b in good])
    assert verdict(rows, both_arms=True, complete=True)["verdict"] == "pass"
    assert rows[1]["prefill_fraction"] == (0.01 + 0.1) / 1.0

    differ = [good[0], _row(2, 90, 90, 90, [3, 4], [3, 5])]
    rows = join_arms([a for a, _ in differ], [b for _, b in differ])
    v = verdict(rows, both_arms=True, complete=True)
    assert v["verdict"] == "fail" and rows[1]["first_difference"] == 1 and "token 1" in v["failures"][0]

    for actual in (89, 91):                                         # short of, or beyond, what it should reuse
        off_rule = [good[0], _row(2, actual, 90, 90, [3], [3])]
        rows = join_arms([a for a, _ in off_rule], [b for _, b in off_rule])
        assert verdict(rows, both_arms=True, complete=True)["verdict"] == "fail"

    # Out of reach: short of the ideal by the rule is a pass, listed; short of the reachable is a fail.
    allowed = [good[0], _row(2, 26, 133, 26, [3], [3])]
    rows = join_arms([a for a, _ in allowed], [b for _, b in allowed])
    v = verdict(rows, both_arms=True, complete=True)
    assert v["verdict"] == "pass" and v["short_of_ideal"][0]["expected_reuse"] == 133
    assert verdict(rows, both_arms=False, complete=True)["verdict"] == "incomplete"
