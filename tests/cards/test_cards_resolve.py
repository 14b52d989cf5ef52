"""Every branch of card resolution, built in temporary folders."""
import json
from pathlib import Path

import pytest

from ds4kit.cards import CardError, load_card, resolve_card
from ds4kit.cards.resolve import BUNDLED_DIR, CARD_PATH_ENV, HARD_FALLBACK_NAME

NAME = "Test Model X"  # normalises to test-model-x; no bundled card has that name
NORM = "test-model-x"


@pytest.fixture(autouse=True)
def isolated_home(tmp_path, monkeypatch):
    """No real ~/.config/ds4kit/cards or $DS4KIT_CARD_PATH may leak into these tests."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv(CARD_PATH_ENV, raising=False)
    return home


def seed_card():
    return load_card(BUNDLED_DIR / "deepseek-v4-flash-src.json")


def put_card(path: Path, name: str, **changes) -> Path:
    card = seed_card()
    card["name"] = name
    card.update(changes)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(card))
    return path


@pytest.fixture
def model(tmp_path):
    folder = tmp_path / "models"
    folder.mkdir()
    path = folder / "Model-Q2.gguf"
    path.write_bytes(b"GGUF")
    return path


def test_explicit_card_wins_over_everything(tmp_path, model):
    explicit = put_card(tmp_path / "mine.json", "explicit one")
    put_card(model.parent / "Model-Q2.card.json", "sidecar one")
    res = resolve_card(model, NAME, "deepseek4", card_path=explicit)
    assert (res.source, res.name, res.path, res.warning) == ("explicit", "explicit one", str(explicit), None)


def test_explicit_card_missing_is_an_error(tmp_path, model):
    with pytest.raises(CardError, match="nothere.json"):
        resolve_card(model, NAME, "deepseek4", card_path=tmp_path / "nothere.json")


def test_explicit_card_invalid_is_an_error_naming_the_field(tmp_path, model):
    bad = put_card(tmp_path / "bad.json", "bad", hard_limit_reply_budget="1024")
    with pytest.raises(CardError, match=r"bad\.json[\s\S]*hard_limit_reply_budget"):
        resolve_card(model, NAME, "deepseek4", card_path=bad)


def test_model_stem_sidecar_beats_name_sidecar(model):
    stem = put_card(model.parent / "Model-Q2.card.json", "stem sidecar")
    put_card(model.parent / f"{NORM}.json", "name sidecar")
    res = resolve_card(model, NAME, "deepseek4")
    assert (res.source, res.name, res.path) == ("sidecar", "stem sidecar", str(stem))


def test_name_sidecar_in_the_model_folder(model):
    named = put_card(model.parent / f"{NORM}.json", "name sidecar")
    res = resolve_card(model, NAME, "deepseek4")
    assert (res.source, res.path) == ("sidecar", str(named))
    assert str(model.parent / "Model-Q2.card.json") in res.looked_in


def test_invalid_sidecar_is_an_error_not_a_fall_through(model):
    (model.parent / "Model-Q2.card.json").write_text("{")
    with pytest.raises(CardError, match="Model-Q2.card.json"):
        resolve_card(model, "DeepSeek V4 Flash Src", "deepseek4")


def test_sidecar_beats_search_path(tmp_path, model, monkeypatch):
    put_card(tmp_path / "envcards" / f"{NORM}.json", "env card")
    monkeypatch.setenv(CARD_PATH_ENV, str(tmp_path / "envcards"))
    put_card(model.parent / f"{NORM}.json", "name sidecar")
    assert resolve_card(model, NAME, "deepseek4").source == "sidecar"


def test_env_search_path_in_order_then_user_config(tmp_path, model, monkeypatch, isolated_home):
    first, second = tmp_path / "a", tmp_path / "b"
    second_card = put_card(second / f"{NORM}.json", "from b")
    user_card = put_card(isolated_home / ".config/ds4kit/cards" / f"{NORM}.json", "from user config")
    monkeypatch.setenv(CARD_PATH_ENV, f"{first}::{second}")
    res = resolve_card(model, NAME, "deepseek4")
    assert (res.source, res.name, res.path) == ("search-path", "from b", str(second_card))
    assert str(first / f"{NORM}.json") in res.looked_in

    put_card(first / f"{NORM}.json", "from a")
    assert resolve_card(model, NAME, "deepseek4").name == "from a"

    monkeypatch.delenv(CARD_PATH_ENV)
    res = resolve_card(model, NAME, "deepseek4")
    assert (res.source, res.path) == ("search-path", str(user_card))


def test_explicit_search_path_replaces_the_defaults(tmp_path, model, isolated_home):
    put_card(isolated_home / ".config/ds4kit/cards" / f"{NORM}.json", "from user config")
    given = put_card(tmp_path / "given" / f"{NORM}.json", "given")
    assert resolve_card(model, NAME, "deepseek4", search_path=[tmp_path / "given"]).path == str(given)
    assert resolve_card(model, NAME, "deepseek4", search_path=str(tmp_path / "given")).path == str(given)
    res = resolve_card(model, NAME, "deepseek4", search_path=[tmp_path / "empty"])
    assert res.source == "family"  # the user-config card was not consulted


def test_search_path_beats_bundled(tmp_path, model, monkeypatch):
    put_card(tmp_path / "cards" / "deepseek-v4-flash-src.json", "DeepSeek V4 Flash Src", max_tokens=999)
    monkeypatch.setenv(CARD_PATH_ENV, str(tmp_path / "cards"))
    res = resolve_card(model, "DeepSeek V4 Flash Src", "deepseek4")
    assert res.source == "search-path" and res.card["max_tokens"] == 999


def test_bundled_by_normalised_name(model):
    res = resolve_card(model, "DeepSeek V4 Flash Src", "deepseek4")
    assert (res.source, res.name, res.family, res.warning) == ("bundled", "DeepSeek V4 Flash Src", None, None)
    assert res.path == str(BUNDLED_DIR / "deepseek-v4-flash-src.json")
    assert res.card["hard_limit_reply_budget"] == 1024


def test_bundled_lookup_works_without_a_model_path():
    assert resolve_card(None, "DeepSeek V4 Flash Src", "deepseek4").source == "bundled"


def test_family_fallback_by_architecture(model, capsys):
    res = resolve_card(model, NAME, "deepseek4")
    assert (res.source, res.family) == ("family", "deepseek4")
    assert res.card["hard_limit_reply_budget"] == 1024 and res.card["reasoning_effort_tiers"]["high"] == 16384
    assert "family card" in res.warning and NAME in res.warning
    assert "HARD FALLBACK" not in capsys.readouterr().err


def test_hard_fallback_is_loud_on_stderr(model, capsys):
    res = resolve_card(model, NAME, "llama")
    assert (res.source, res.name, res.path, res.family) == ("hard-fallback", HARD_FALLBACK_NAME, None, None)
    assert res.card["max_tokens"] == 16000 and res.card["hard_limit_reply_budget"] == 4096
    assert res.card["reasoning_effort_tiers"] == {}
    err = capsys.readouterr().err
    assert "MODEL CARD HARD FALLBACK" in err and NAME in err and "llama" in err
    assert res.warning in err
    # The warning says where it looked, so the user can put a card there.
    assert str(model.parent / "Model-Q2.card.json") in res.warning


def test_hard_fallback_with_nothing_known(capsys):
    res = resolve_card(None, None, None)
    assert res.source == "hard-fallback" and "HARD FALLBACK" in capsys.readouterr().err


def test_hard_fallback_can_stay_quiet_for_a_run_that_reports_it(model, capsys):
    res = resolve_card(model, NAME, "llama", announce=False)
    assert res.warning and capsys.readouterr().err == ""


def test_architecture_is_not_a_path(model, capsys):
    assert resolve_card(model, NAME, "../bundled/deepseek4").source == "hard-fallback"


def test_to_manifest_shape(model):
    res = resolve_card(model, NAME, "deepseek4")
    assert res.to_manifest() == {"source": "family", "name": res.name, "path": res.path,
                                 "family": "deepseek4", "warning": res.warning}


def test_a_name_with_no_letters_or_digits_skips_name_lookups(model, capsys):
    res = resolve_card(model, "***", "deepseek4")
    assert res.source == "family"
    assert res.looked_in == (str(model.parent / "Model-Q2.card.json"),)


def test_hard_fallback_card_is_a_private_copy(model):
    first = resolve_card(model, NAME, "llama", announce=False)
    first.card["sampling"]["temperature"] = 0.0
    first.card["max_tokens"] = 1
    again = resolve_card(model, NAME, "llama", announce=False)
    assert again.card["sampling"]["temperature"] == 1.0 and again.card["max_tokens"] == 16000
