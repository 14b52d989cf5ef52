from ds4kit.thermal.throttle import ThrottleParams, detect


def _samples(n, values=None, throttle=None):
    """n samples one second apart; values(i) and throttle(i) give each sample's content."""
    out = []
    for i in range(n):
        s = {"i": i, "t": float(i), "phase": "run", "values": values(i) if values else {}}
        thr = throttle(i) if throttle else None
        if thr:
            s["throttle"] = thr
        out.append(s)
    return out


def _nvml(bits, active):
    return {"nvml:0": {"source": "nvml", "reasons": bits, "active": active}}


def test_nvml_thermal_reason_makes_one_episode_and_idle_does_not():
    def thr(i):
        if 3 <= i < 6:
            return _nvml(0x20, ["SwThermalSlowdown"])
        return _nvml(0x1, ["GpuIdle"])  # informational, never an episode
    r = detect(_samples(10, throttle=thr), [])
    (e,) = r["episodes"]
    assert (e["device"], e["start_t"], e["end_t"], e["duration_s"]) == ("gpu0", 3.0, 6.0, 3.0)
    assert e["sources"] == ["nvml"] and "SwThermalSlowdown" in e["evidence"][0]["detail"]


def test_stuck_gpu_metrics_bit_is_ignored_but_a_changing_one_counts():
    hotspot, ppt = 1 << 36, 1 << 0

    def thr(i):
        word = hotspot | (ppt if 4 <= i < 7 else 0)  # TEMP_HOTSPOT stuck on, as on gfx1151
        return {"gpu_metrics:card0": {"source": "gpu_metrics", "indep": word}}
    r = detect(_samples(10, throttle=thr), [])
    assert [b["bit"] for b in r["ignored_bits"]] == ["TEMP_HOTSPOT"]
    assert "all 10 samples" in r["ignored_bits"][0]["reason"]
    (e,) = r["episodes"]
    assert (e["device"], e["start_t"], e["end_t"]) == ("card0", 4.0, 7.0)
    assert "PPT0" in e["evidence"][0]["detail"] and e["sources"] == ["gpu_metrics_bits"]


def test_v3_residency_counter_growth_is_evidence():
    counts = [5, 5, 5, 6, 9, 12, 12, 12]
    r = detect(_samples(8, throttle=lambda i: {"gpu_metrics:card1": {
        "source": "gpu_metrics", "residency": {"thm_gfx": counts[i], "spl": 0}}}), [])
    (e,) = r["episodes"]
    assert (e["start_t"], e["end_t"]) == (3.0, 6.0)
    assert "thm_gfx grew from 5 to 12" in e["evidence"][0]["detail"]


def test_clock_drop_under_sustained_load_against_own_baseline():
    clocks = [1980] * 10 + [1500, 1480, 1490] + [1975] * 5 + [600]   # last sample: idle, so not a drop
    loads = [100] * 18 + [0]
    pairs = [("gpu0.sm_clock_mhz", "gpu0.util_gpu_pct")]
    r = detect(_samples(19, values=lambda i: {"gpu0.sm_clock_mhz": clocks[i], "gpu0.util_gpu_pct": loads[i]}), pairs)
    (e,) = r["episodes"]
    assert (e["device"], e["start_t"], e["end_t"]) == ("gpu0", 10.0, 13.0)
    assert e["sources"] == ["clock_drop"] and "1480 MHz" in e["evidence"][0]["detail"]
    assert r["clock_baselines"]["gpu0.sm_clock_mhz"]["baseline_mhz"] == 1980.0


def test_one_sample_dip_and_short_load_bursts_are_not_episodes():
    clocks = [1980] * 6 + [1000] + [1980] * 6 + [900, 900]
    loads = [100] * 13 + [90, 0]  # the 2-sample dip at the end has only one loaded sample
    pairs = [("gpu0.sm_clock_mhz", "gpu0.util_gpu_pct")]
    r = detect(_samples(15, values=lambda i: {"gpu0.sm_clock_mhz": clocks[i], "gpu0.util_gpu_pct": loads[i]}), pairs)
    assert r["episodes"] == []


def test_too_little_load_gives_no_baseline_and_says_so():
    pairs = [("gpu0.sm_clock_mhz", "gpu0.util_gpu_pct")]
    r = detect(_samples(6, values=lambda i: {"gpu0.sm_clock_mhz": 1000, "gpu0.util_gpu_pct": 5}), pairs)
    b = r["clock_baselines"]["gpu0.sm_clock_mhz"]
    assert b["baseline_mhz"] is None and "fewer than 5 samples" in b["note"]


def test_overlapping_evidence_of_one_device_merges_into_one_episode():
    clocks = [1980] * 8 + [1400] * 4 + [1980] * 4
    pairs = [("gpu0.sm_clock_mhz", "gpu0.util_gpu_pct")]
    r = detect(_samples(16, values=lambda i: {"gpu0.sm_clock_mhz": clocks[i], "gpu0.util_gpu_pct": 100},
                        throttle=lambda i: _nvml(0x4, ["SwPowerCap"]) if 9 <= i < 14 else _nvml(0, [])), pairs)
    (e,) = r["episodes"]
    assert (e["start_t"], e["end_t"]) == (8.0, 14.0)
    assert e["sources"] == ["clock_drop", "nvml"]


def test_params_change_the_verdict():
    clocks = [2000] * 8 + [1850] * 3 + [2000] * 3   # a 7.5% drop
    pairs = [("c.gfxclk_mhz", "c.gfx_activity_pct")]
    samples = _samples(14, values=lambda i: {"c.gfxclk_mhz": clocks[i], "c.gfx_activity_pct": 99})
    assert detect(samples, pairs)["episodes"] == []
    assert len(detect(samples, pairs, ThrottleParams(drop_fraction=0.05))["episodes"]) == 1
