"""The three engine-test configurations together cover every case item 6a names, and
each is a file llama.cpp and the reference can both run."""
from ds4_ref_engine_configs import ENGINE_CASES, REQUIRED, config_of, coverage


def test_engine_cases_cover_everything_together():
    union = set()
    for case in ENGINE_CASES:
        union |= coverage(config_of(case), case.n_tokens)
    assert REQUIRED <= union, REQUIRED - union
    assert len(ENGINE_CASES) >= 3


def test_each_engine_case_is_llama_runnable():
    for case in ENGINE_CASES:
        cfg = config_of(case)
        assert {4, 128} <= set(cfg.ratios), case.name
        assert cfg.indexer_dim == 128 and cfg.hc_count == 4, case.name
        assert not cfg.validate(), (case.name, cfg.validate())
        assert case.n_tokens >= 600, case.name
