"""Fit lines and the compute rules (the reference's decision matrix plus the duty-cycle model)."""

from __future__ import annotations

import pytest

from sparktop.plan.estimate import GB, Range, decode_rate
from sparktop.plan.verdict import (
    CAREFUL,
    FITS,
    NO,
    OK,
    OOM_RISK,
    TIGHT,
    WONT_FIT,
    GpuLoad,
    Lines,
    compute_verdict,
    fit_verdict,
)

# --- fit ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("total_gb", "verdict"),
    [
        (15, FITS),
        (80, FITS),
        (80.01, TIGHT),
        (100, TIGHT),
        (100.01, OOM_RISK),
        (128, OOM_RISK),
        (128.01, WONT_FIT),
    ],
)
def test_lines_on_a_spark(total_gb, verdict):
    assert Lines().classify(total_gb * GB) == verdict


def test_lines_follow_the_live_pool():
    spark = Lines.for_pool(128.5 * GB)  # MemTotal on a Spark is about 119.7 GiB = 128.5 GB
    assert (spark.safe, spark.aggressive, spark.pool, spark.scaled) == (80 * GB, 100 * GB, 128.5 * GB, False)
    small = Lines.for_pool(64 * GB)
    assert (
        small.scaled and small.safe == pytest.approx(40 * GB) and small.aggressive == pytest.approx(50 * GB)
    )


def test_a_hair_over_the_line_never_says_zero_would_have_to_go():
    # `TIGHT … 0 GB would have to go to be back under 15.8 GB` (issue 23 item 12)
    lines = Lines.for_pool(25.3 * GB)
    v = fit_verdict(Range.gb(3), [("x", Range.exact(lines.safe - 3 * GB + 0.02 * GB))], lines)
    assert v.verdict == TIGHT
    assert "0 GB would" not in v.reason
    assert "less than 0.1 GB would have to go to be back under 15.8 GB" in v.reason


def test_fit_names_the_workload_that_pushes_it_over_and_how_much_must_go():
    items = [("a", Range.gb(30)), ("b", Range.gb(40)), ("c", Range.gb(15))]
    v = fit_verdict(Range.gb(3), items, Lines())
    assert v.verdict == TIGHT and v.total.mid == 88 * GB
    assert v.culprit == "c" and v.line_crossed == "safe"
    assert v.excess == pytest.approx(8 * GB)
    assert v.enough_to_drop[0] == "c"  # the smallest workload that alone would be enough
    assert "c pushes it over the safe line" in v.reason and "8 GB would have to go" in v.reason


def test_fit_over_the_pool_and_the_high_estimate():
    v = fit_verdict(Range.gb(3), [("huge", Range.gb(141))], Lines())
    assert v.verdict == WONT_FIT and v.line_crossed == "pool" and v.culprit == "huge"
    near = fit_verdict(Range.gb(3), [("x", Range(70 * GB, 75 * GB, 90 * GB))], Lines())
    # the verdict goes by the honest (high) side and says both
    assert near.verdict == TIGHT and near.mid_verdict == FITS
    assert near.headline == "fits at mid, tight at high"
    assert near.reason.startswith(
        "fits at mid, tight at high: 78 GB (high 93 GB): the high estimate is between"
    )
    assert near.culprit == "x" and near.excess == pytest.approx(13 * GB)


def test_the_high_side_can_cross_two_lines():
    v = fit_verdict(Range.gb(3), [("x", Range(70 * GB, 75 * GB, 100 * GB))], Lines())
    assert (v.mid_verdict, v.verdict) == (FITS, OOM_RISK)
    assert (
        v.reason.startswith("fits at mid, OOM risk at high") and "over the 100 GB aggressive line" in v.reason
    )
    same = fit_verdict(Range.gb(3), [("x", Range(80 * GB, 85 * GB, 90 * GB))], Lines())
    assert same.headline == TIGHT and not same.reason.startswith("tight at mid")


def test_fit_that_fits_says_the_headroom():
    v = fit_verdict(Range.gb(3), [("x", Range.gb(12))], Lines())
    assert v.verdict == FITS and v.culprit is None and v.excess == 0
    assert "65 GB to spare" in v.reason


# --- compute ------------------------------------------------------------------------------------------------


def load(name, use, duty=None, group=None, bpt=None, heavy=False):
    default = {"sustained": 1.0, "batch": 0.8, "interactive": 0.3, "pipeline": 0.2, "none": 0.0}[use]
    return GpuLoad(name, use, default if duty is None else duty, group or f"item:{name}", bpt, heavy)


def test_training_alone_is_ok():
    v = compute_verdict([load("tetris", "sustained")])
    assert v.verdict == OK and "all 48 SMs to itself" in v.reason


def test_training_with_interactive_inference_is_no():
    v = compute_verdict(
        [
            load("tetris", "sustained"),
            load("whisper", "pipeline", group="pipeline:audio"),
            load("tts", "pipeline", group="pipeline:audio"),
            load("llm", "interactive"),
        ]
    )
    assert v.verdict == NO
    assert "tetris saturates the 48 SMs: interactive inference" in v.reason and "will stall" in v.reason
    # expected slowdown: 1 + sum over the other groups of duty x (measured pair slowdown - 1): training busy
    # all the time (a burst beside GEMMs: 2.0x), the llm 0.3 of the time (a burst beside a decoder: 1.9x)
    assert v.slowdown["whisper"] == pytest.approx(1 + 1.0 * 1.0 + 0.3 * 0.9)
    assert v.slowdown["llm"] == pytest.approx(1 + 1.0 * 1.0 + 0.4 * 0.9)  # the audio group is busy 0.2 + 0.2
    assert "tetris" not in v.slowdown
    assert "about 2.4x slower on average" in v.reason


@pytest.mark.parametrize(
    ("victim", "aggressor", "measured"),
    [
        # shared/reference/measured-h100.md, section 2
        (load("decoder", "interactive", bpt=43e9, heavy=True), load("train", "sustained"), 2.35),
        (load("chat", "interactive", bpt=5e9), load("train", "sustained"), 2.0),
        (
            load("big-a", "interactive", bpt=43e9, heavy=True),
            load("big-b", "interactive", bpt=48e9, heavy=True),
            2.2,
        ),
        (load("chat", "interactive", bpt=5e9), load("big", "interactive", bpt=43e9, heavy=True), 1.9),
    ],
)
def test_pair_slowdowns_are_the_measured_ones(victim, aggressor, measured):
    v = compute_verdict([victim, aggressor])
    assert v.overlap[victim.name] == pytest.approx(measured)
    # on average the aggressor is busy its duty of the time
    assert v.slowdown[victim.name] == pytest.approx(1 + aggressor.duty * (measured - 1))
    if victim.gpu_use == "interactive" and aggressor.gpu_use == "sustained":
        assert 2.0 <= v.slowdown[victim.name] <= 2.4  # a decoder beside training: 2.0-2.4x, not 3x


def test_shared_decode_speed_and_the_summary_agree_with_the_slowdown():
    a = load("70b", "interactive", bpt=43e9, heavy=True)
    b = load("devstral", "interactive", bpt=48e9, heavy=True)
    v = compute_verdict([a, b])
    for victim in (a, b):
        alone = decode_rate(victim.bytes_per_token).mid
        shared = v.decode_shared[victim.name].mid
        assert alone / shared == pytest.approx(v.overlap[victim.name])  # 2.2x each: the same figure
        assert f"{victim.name} {alone:.1f} -> {shared:.1f} tok/s" in v.reason


def test_sm_count_comes_from_the_device():
    v = compute_verdict([load("t", "sustained"), load("chat", "interactive")], sm_count=20)
    assert "the 20 SMs" in v.reason


def test_two_big_decoders_is_no_and_they_split_the_bandwidth():
    a = load("70b", "interactive", bpt=43e9, heavy=True)
    b = load("devstral", "interactive", bpt=48e9, heavy=True)
    v = compute_verdict([a, b])
    assert v.verdict == NO and "big decoders" in v.reason and "run one at a time" in v.reason
    # time-sliced, each gets about half the time: 2.2x slower each, whatever their sizes
    assert v.decode_shared["70b"].mid == pytest.approx(decode_rate(43e9).mid / 2.2)
    assert v.decode_shared["devstral"].mid == pytest.approx(decode_rate(48e9).mid / 2.2)


def test_a_big_decoder_beside_light_work_is_careful():
    v = compute_verdict(
        [
            load("whisper", "pipeline", group="pipeline:audio"),
            load("f5", "pipeline", group="pipeline:audio"),
            load("8b", "interactive", bpt=5e9),
            load("devstral", "interactive", bpt=48e9, heavy=True),
        ]
    )
    assert v.verdict == CAREFUL
    assert "devstral competes with the audio pipeline and 8b" in v.reason
    assert "avoid simultaneous inference" in v.reason
    # 1.9x beside each of the other two groups while all three answer
    assert "about 2.8x slower while they overlap" in v.reason and v.overlap["devstral"] == pytest.approx(2.8)


def test_sequential_pipeline_and_light_bursty_work_is_ok():
    stages = [load(n, "pipeline", group="pipeline:audio") for n in ("whisper", "llm", "tts")]
    v = compute_verdict(stages)
    assert v.verdict == OK and "sequential stages" in v.reason
    light = compute_verdict([*stages[:2], load("8b", "interactive", bpt=5e9)])
    assert light.verdict == OK and "rarely overlap" in light.reason


def test_batch_beside_interactive_and_two_sustained_are_careful():
    v = compute_verdict([load("embed", "batch"), load("chat", "interactive")])
    assert v.verdict == CAREFUL and "keeps the GPU busy" in v.reason
    assert v.slowdown["chat"] == pytest.approx(1.8)
    two = compute_verdict([load("a", "sustained"), load("b", "sustained")])
    assert two.verdict == CAREFUL and "1/2 of its speed" in two.reason


def test_many_busy_bursty_workloads_become_careful():
    v = compute_verdict([load(f"m{i}", "interactive", duty=0.4) for i in range(3)])
    assert v.verdict == CAREFUL and v.slowdown["m0"] == pytest.approx(1 + 2 * 0.4 * 0.9)


def test_workloads_without_gpu_use_do_not_count():
    v = compute_verdict([load("cpu-job", "none"), load("chat", "interactive")])
    assert v.verdict == OK and v.slowdown == {"chat": 1.0}
    assert compute_verdict([]).reason == "nothing in the plan uses the GPU"
