"""The prefix cache: a prompt that starts with a cached one restores that state and prefills
only the rest, and what follows is bitwise what a cold prefill of the whole prompt gives (the
oracle is that cold session). An edited earlier turn misses; the memory tier keeps to its budget,
least recently used out first, a shared prefix kept while anything extending it is used; the disk
tier survives a new cache (a new process) under its cap, and never uses a half-written or bad file."""
import numpy as np
import pytest

from engine_fixtures import synth_tiny_path, tokens

from ds4kit.engine import Model
from ds4kit.engine.prefix_cache import PrefixCache

OPTS = {"max_ctx": 512}


@pytest.fixture(scope="module")
def model():
    return Model.load(synth_tiny_path(), threads=2)


def _cold(model, prompt):
    s = model.session(**OPTS)
    return s, s.prefill(prompt, "batched")


def _turn(model, cache, prompt):
    """One turn through the cache: restore the longest prefix, prefill the rest, store the state."""
    s = model.session(**OPTS)
    hit = cache.restore_longest(s, prompt)
    logits = hit.logits if hit.whole else s.prefill(prompt[hit.reused:], "batched")
    cache.put(s.snapshot(last_logits=logits))
    return s, hit, logits


def test_second_turn_reuses_the_first_and_matches_a_cold_prefill(model):
    V = model.hparams["n_vocab"]
    turn1 = tokens(150, V, 61)
    turn2 = turn1 + tokens(37, V, 62)
    cache = PrefixCache(model, OPTS)
    _, miss, _ = _turn(model, cache, turn1)
    assert miss.reused == 0 and miss.tier is None
    s, hit, logits = _turn(model, cache, turn2)
    assert hit.reused == len(turn1) and hit.tier == "memory"
    cold, cold_logits = _cold(model, turn2)
    assert np.array_equal(logits, cold_logits)
    cont = tokens(4, V, 63)
    assert np.array_equal(np.stack([s.decode(t) for t in cont]), np.stack([cold.decode(t) for t in cont]))


def test_same_prompt_again_needs_no_prefill_and_branches_share_a_prefix(model):
    V = model.hparams["n_vocab"]
    base = tokens(90, V, 64)
    cache = PrefixCache(model, OPTS)
    _turn(model, cache, base)
    _, again, logits = _turn(model, cache, base)
    assert again.whole and again.reused == len(base)
    assert np.array_equal(logits, _cold(model, base)[1])
    for seed in (65, 66):  # two different follow-ups from one prefix
        follow = base + tokens(12, V, seed)
        _, hit, logits = _turn(model, cache, follow)
        assert hit.reused == len(base)
        assert np.array_equal(logits, _cold(model, follow)[1])


def test_an_edited_earlier_turn_misses(model):
    V = model.hparams["n_vocab"]
    turn1 = tokens(80, V, 67)
    cache = PrefixCache(model, OPTS)
    _turn(model, cache, turn1)
    edited = list(turn1)
    edited[10] = (edited[10] + 1) % V
    _, hit, _ = _turn(model, cache, edited + tokens(5, V, 68))
    assert hit.reused == 0
    assert cache.stats["misses"] == 2


def test_memory_budget_is_lru_and_prefix_aware(model):
    V = model.hparams["n_vocab"]
    system = tokens(60, V, 69)
    cache = PrefixCache(model, OPTS, max_bytes=10 << 30)
    _turn(model, cache, system)
    lone = tokens(61, V, 70)
    _turn(model, cache, lone)                            # used after the system prompt ...
    _turn(model, cache, system + tokens(5, V, 71))       # ... but a conversation on the system prompt is newer
    one = max(e.bytes for e in cache._mem.values())
    cache.max_bytes = 2 * one + one // 2                 # room for two entries
    cache._evict()
    kept = {len(k) for k in cache._mem}
    assert kept == {60, 65}, kept                        # the lone entry went, the shared prefix stayed
    assert cache.memory_bytes <= cache.max_bytes and cache.stats["evicted"] == 1


def test_disk_tier_survives_a_new_cache_and_keeps_its_cap(model, tmp_path):
    V = model.hparams["n_vocab"]
    turn1 = tokens(120, V, 72)
    first = PrefixCache(model, OPTS, max_bytes=0, cache_dir=tmp_path)  # everything spills to disk
    _turn(model, first, turn1)
    assert first.stats["written_to_disk"] == 1 and len(first) == 0
    second = PrefixCache(model, OPTS, cache_dir=tmp_path)             # a later process
    turn2 = turn1 + tokens(9, V, 73)
    _, hit, logits = _turn(model, second, turn2)
    assert hit.reused == len(turn1) and hit.tier == "disk"
    assert np.array_equal(logits, _cold(model, turn2)[1])
    # The cap: a third entry pushes the oldest file out.
    size = max(p.stat().st_size for p in tmp_path.glob("*.ds4snap"))
    capped = PrefixCache(model, OPTS, max_bytes=0, cache_dir=tmp_path, disk_max_bytes=2 * size + size // 2)
    _turn(model, capped, tokens(50, V, 74))
    _turn(model, capped, tokens(51, V, 75))
    assert sum(p.stat().st_size for p in tmp_path.glob("*.ds4snap")) <= capped.disk_max_bytes


def test_half_written_and_bad_files_are_never_used(model, tmp_path):
    V = model.hparams["n_vocab"]
    turn1 = tokens(70, V, 76)
    writer = PrefixCache(model, OPTS, max_bytes=0, cache_dir=tmp_path)
    _turn(model, writer, turn1)
    (good,) = list(tmp_path.glob("*.ds4snap"))
    # A save that was killed leaves only its temporary file: never read.
    (tmp_path / f".{good.name}.abc123.tmp").write_bytes(good.read_bytes()[:1000])
    # A damaged finished file: skipped with a warning, moved aside, the lookup carries on.
    data = bytearray(good.read_bytes())
    data[len(data) // 2] ^= 0xFF
    good.write_bytes(bytes(data))
    warnings = []
    reader = PrefixCache(model, OPTS, cache_dir=tmp_path, warn=warnings.append)
    s = model.session(**OPTS)
    hit = reader.restore_longest(s, turn1 + tokens(3, V, 77))
    assert hit.reused == 0 and s.pos == 0
    assert reader.stats["skipped_files"] == 1 and "checksum" in warnings[0]
    assert not list(tmp_path.glob("*.ds4snap"))          # moved aside, not deleted
    assert list(tmp_path.glob(".*.bad"))


def test_snapshots_of_other_options_are_refused(model):
    cache = PrefixCache(model, OPTS)
    s = model.session(512, fp8_kv=False)
    s.prefill([1, 2, 3], "batched")
    with pytest.raises(ValueError, match="options"):
        cache.put(s.snapshot())


def test_an_entry_that_runs_past_the_prompt_is_rewound_to_it(model):
    """A prompt that leaves a cached stream within its rewind reach (a reply re-tokenised differently
    near its end) restores it and rewinds; what follows is bitwise a cold prefill. Beyond the reach,
    the shorter exact prefix serves instead."""
    V = model.hparams["n_vocab"]
    base = tokens(100, V, 78)
    cache = PrefixCache(model, OPTS)
    s = model.session(**OPTS)
    s.prefill(base, "batched")
    cache.put(s.snapshot(), rewind_reach=s.max_rewind)          # an exact prefix at 100
    s.prefill(tokens(20, V, 79), "batched")
    cache.put(s.snapshot(), rewind_reach=s.max_rewind)          # the same stream 20 tokens on
    stream = s.tokens
    prompt = stream[:112] + tokens(6, V, 80)                    # leaves it 8 before its end
    s2 = model.session(**OPTS)
    hit = cache.restore_longest(s2, prompt)
    assert (hit.reused, hit.rewound, s2.pos) == (112, 8, 112) and cache.stats["rewinds"] == 1
    logits = s2.prefill(prompt[112:], "batched")
    assert np.array_equal(logits, _cold(model, prompt)[1])
    # Without a rewind reach recorded the entry is only usable as an exact prefix.
    plain = PrefixCache(model, OPTS)
    plain.put(s.snapshot())
    assert plain.restore_longest(model.session(**OPTS), prompt).reused == 0
    # Beyond the reach (the prompt leaves the 140-token entry 35 before its end): the exact prefix
    # at 100 serves instead.
    s.prefill(tokens(20, V, 81), "batched")
    far_cache = PrefixCache(model, OPTS)
    far_cache.put(_snap_at(model, base), rewind_reach=32)
    far_cache.put(s.snapshot(), rewind_reach=s.max_rewind)
    far = s.tokens[:105] + tokens(5, V, 82)
    assert far_cache.restore_longest(model.session(**OPTS), far).reused == 100


def _snap_at(model, ids):
    s = model.session(**OPTS)
    s.prefill(ids, "batched")
    return s.snapshot()
