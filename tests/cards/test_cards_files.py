"""Bundled cards, the card schema, and error messages for bad card files."""
import copy
import hashlib
import json

import pytest

from ds4kit.cards import CardError, load_card, normalise_name
from ds4kit.cards.resolve import BUNDLED_DIR, FAMILY_SUFFIX

SEED_CARD = BUNDLED_DIR / "deepseek-v4-flash-src.json"
FAMILY_CARD = BUNDLED_DIR / "deepseek4.family.json"
# The seed report gives this sha256 for the sidecar card it used; our bundled copy must be that file.
SEED_CARD_SHA256 = "dc4624a72fac9d87f022f16704cbce97157ce98295cfe9dc2901d35ffba64497"


def test_bundled_seed_card_is_byte_identical_to_the_seed_reports_card():
    assert hashlib.sha256(SEED_CARD.read_bytes()).hexdigest() == SEED_CARD_SHA256


def test_seed_card_values():
    card = load_card(SEED_CARD)
    assert card["name"] == "DeepSeek V4 Flash Src"
    assert card["max_tokens"] == 32768 and card["hard_limit_reply_budget"] == 1024
    assert card["reasoning_effort_tiers"] == {"low": 4096, "medium": 8192, "high": 16384, "x-high": 24576, "max": 32256}


def test_family_card_has_the_seed_values_and_is_marked_as_family():
    seed, fam = load_card(SEED_CARD), load_card(FAMILY_CARD)
    assert fam["family"] == "deepseek4" and "family" not in seed
    for key in ("source", "verified_at", "max_tokens", "complex_problem_max_tokens", "hard_limit_reply_budget",
                "sampling", "reasoning_effort_tiers"):
        assert fam[key] == seed[key], key


def test_every_bundled_card_is_valid_and_named_after_its_normalised_name():
    files = sorted(BUNDLED_DIR.glob("*.json"))
    assert files
    for path in files:
        card = load_card(path)
        if path.name.endswith(FAMILY_SUFFIX):
            assert path.name == card["family"] + FAMILY_SUFFIX
        else:
            assert path.stem == normalise_name(card["name"])


@pytest.mark.parametrize("name, want", [
    ("DeepSeek V4 Flash Src", "deepseek-v4-flash-src"),
    ("  DeepSeek--V4__Flash (Q4_K) ", "deepseek-v4-flash-q4-k"),
    ("deepseek-v4-flash-src", "deepseek-v4-flash-src"),
    ("Ünïcode Ⅴ4", "n-code-4"),
    ("***", ""),
])
def test_normalise_name(name, want):
    assert normalise_name(name) == want


def write_card(tmp_path, mutate, name="bad.json"):
    card = copy.deepcopy(load_card(SEED_CARD))
    mutate(card)
    path = tmp_path / name
    path.write_text(json.dumps(card))
    return path


def card_error(path):
    with pytest.raises(CardError) as info:
        load_card(path)
    return str(info.value)


def test_missing_file_names_the_file(tmp_path):
    msg = card_error(tmp_path / "nope.json")
    assert "nope.json" in msg and "does not exist" in msg


def test_not_json_names_the_file_and_line(tmp_path):
    path = tmp_path / "broken.json"
    path.write_text('{"name": "x",\n oops}')
    msg = card_error(path)
    assert "broken.json" in msg and "not JSON" in msg and "line 2" in msg


@pytest.mark.parametrize("mutate, field", [
    (lambda c: c.pop("hard_limit_reply_budget"), "hard_limit_reply_budget"),
    (lambda c: c.__setitem__("max_tokens", "32768"), "max_tokens"),
    (lambda c: c["sampling"].__setitem__("top_p", 1.5), "sampling.top_p"),
    (lambda c: c["sampling"].pop("min_p"), "min_p"),
    (lambda c: c["reasoning_effort_tiers"].__setitem__("high", -1), "reasoning_effort_tiers.high"),
    (lambda c: c["reasoning_effort_tiers"].pop("x-high"), "x-high"),
    (lambda c: c.__setitem__("max_token", 1), "max_token"),
    (lambda c: c.__setitem__("verified_at", "July 2026"), "verified_at"),
])
def test_invalid_card_names_the_file_and_the_field(tmp_path, mutate, field):
    msg = card_error(write_card(tmp_path, mutate))
    assert "bad.json" in msg and field in msg


def test_card_must_be_an_object(tmp_path):
    path = tmp_path / "list.json"
    path.write_text("[1, 2]")
    msg = card_error(path)
    assert "list.json" in msg and "object" in msg
