"""Thinking budgets: the rule, the seed report's numbers, and the loud zero."""
import pytest

from ds4kit.cards import HARD_FALLBACK_CARD, derive_thinking_budget, load_card
from ds4kit.cards.resolve import BUNDLED_DIR


@pytest.fixture(scope="module")
def seed_card():
    return load_card(BUNDLED_DIR / "deepseek-v4-flash-src.json")


def test_seed_hard_fallback_at_2048_gives_zero_and_a_loud_warning(capsys):
    # Seed defect 3: --default-max-tokens 2048 with the hard fallback -> max(0, 2048 - 4096) = 0.
    b = derive_thinking_budget(HARD_FALLBACK_CARD, max_tokens=2048, reasoning_effort="high")
    assert (b.tokens, b.reply_budget, b.tier, b.clamped_by) == (0, 4096, "high", "max_tokens")
    for number in ("2048", "4096", "-2048"):
        assert number in b.warning
    assert "THINKING BUDGET IS 0" in b.warning
    err = capsys.readouterr().err
    assert "THINKING BUDGET IS 0" in err and "2048" in err


def test_seed_card_high_tier_clamped_by_context(seed_card, capsys):
    # Seed: with its card and --max-ctx 16384 the high tier (16384) is clamped to 16384 - 1024 = 15360.
    b = derive_thinking_budget(seed_card, max_tokens=32768, reasoning_effort="high", max_ctx=16384)
    assert (b.tokens, b.reply_budget, b.tier, b.clamped_by, b.warning) == (15360, 1024, "high", "max_ctx", None)
    assert capsys.readouterr().err == ""


def test_seed_humaneval_budget_20480_keeps_the_high_tier(seed_card):
    # The seed advises a 20,480-token budget for high effort: 20480 - 1024 leaves the full 16384 tier.
    b = derive_thinking_budget(seed_card, max_tokens=20480, reasoning_effort="high", max_ctx=32768)
    assert (b.tokens, b.clamped_by) == (16384, None)


def test_seed_4096_budget_truncates_thinking(seed_card):
    # The seed's 4,096-token run: thinking could use only 4096 - 1024 = 3072 of the 16384 tier.
    b = derive_thinking_budget(seed_card, max_tokens=4096, reasoning_effort="high")
    assert (b.tokens, b.clamped_by) == (3072, "max_tokens")


@pytest.mark.parametrize("effort", ["low", "medium", "high", "x-high", "max"])
@pytest.mark.parametrize("max_tokens", [1, 1024, 1025, 5000, 17000, 40000])
@pytest.mark.parametrize("max_ctx", [None, 2048, 9000, 30000])
def test_rule_min_of_tier_and_limits_floored_at_zero(seed_card, effort, max_tokens, max_ctx):
    b = derive_thinking_budget(seed_card, max_tokens=max_tokens, reasoning_effort=effort, max_ctx=max_ctx,
                               announce=False)
    candidates = [seed_card["reasoning_effort_tiers"][effort], max_tokens - 1024]
    if max_ctx is not None:
        candidates.append(max_ctx - 1024)
    assert b.tokens == max(0, min(candidates))
    assert b.reply_budget == 1024
    assert (b.warning is not None) == (b.tokens == 0)
    assert b.tokens <= seed_card["reasoning_effort_tiers"][effort]
    assert b.tokens + b.reply_budget <= max(max_tokens, 1024)


def test_default_max_tokens_is_the_cards(seed_card):
    b = derive_thinking_budget(seed_card, max_tokens=None, reasoning_effort="max")
    assert (b.tokens, b.clamped_by) == (31744, "max_tokens")  # 32768 - 1024 < 32256


def test_thinking_off_is_zero_without_warning(seed_card, capsys):
    b = derive_thinking_budget(HARD_FALLBACK_CARD, max_tokens=2048, reasoning_effort=None)
    assert (b.tokens, b.tier, b.warning) == (0, None, None)
    assert capsys.readouterr().err == ""


def test_zero_from_context_names_max_ctx(seed_card):
    b = derive_thinking_budget(seed_card, max_tokens=8192, reasoning_effort="low", max_ctx=1000, announce=False)
    assert b.tokens == 0 and b.clamped_by == "max_ctx"
    assert "max_ctx 1000" in b.warning and "-24" in b.warning


def test_zero_budget_stays_quiet_when_not_announced(capsys):
    b = derive_thinking_budget(HARD_FALLBACK_CARD, max_tokens=100, reasoning_effort="low", announce=False)
    assert b.tokens == 0 and b.warning
    assert capsys.readouterr().err == ""


def test_unknown_effort_lists_valid_tiers(seed_card):
    with pytest.raises(ValueError, match=r"'ultra'.*low, medium, high, x-high, max"):
        derive_thinking_budget(seed_card, max_tokens=4096, reasoning_effort="ultra")
    with pytest.raises(ValueError, match=r"x-high"):
        derive_thinking_budget(HARD_FALLBACK_CARD, max_tokens=4096, reasoning_effort="xhigh")


@pytest.mark.parametrize("kw", [{"max_tokens": 0}, {"max_tokens": -5}, {"max_tokens": 2.5},
                                {"max_tokens": True}, {"max_tokens": 10, "max_ctx": 0}])
def test_bad_limits_are_rejected(seed_card, kw):
    with pytest.raises(ValueError, match="max_"):
        derive_thinking_budget(seed_card, reasoning_effort="high", **kw)
