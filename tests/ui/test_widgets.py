"""The dashboard's pieces on their own: bar geometry, legend folding, colour stability, formatting."""

from __future__ import annotations

from sparktop.analysis.row_trends import RowTrends
from sparktop.core.format import fmt_bytes, fmt_duration, fmt_rate, sparkline
from sparktop.core.snapshot import GB, GIB, Accounting, Consumer
from sparktop.ui.themes import load_themes
from sparktop.ui.widgets.budget_bar import (
    BarState,
    BudgetBar,
    ColorAssigner,
    _columns,
    bar_state,
    build_segments,
)

PALETTE = load_themes()[0]["sparktop-dark"].palette
POOL = 128 * GB


def accounting(*sizes: int, unattributed: int = 2 * GIB) -> Accounting:
    consumers = [
        Consumer(key=f"container:{i}", label=f"c{i}", kind="container", cpu_bytes=n)
        for i, n in enumerate(sizes)
    ]
    return Accounting(used=sum(sizes) + unattributed, consumers=consumers, unattributed=unattributed)


def test_bar_state_words():
    assert bar_state(79 * GB, 80 * GB, 100 * GB) is BarState.UNDER_SAFE
    assert bar_state(80 * GB, 80 * GB, 100 * GB) is BarState.BETWEEN
    assert bar_state(100 * GB, 80 * GB, 100 * GB) is BarState.OVER_AGGRESSIVE


def test_title_says_how_far_the_safe_line_is_only_when_the_pool_reaches_it():
    bar = BudgetBar()
    acct = accounting(10 * GIB)
    title = bar._title(acct.used, POOL, 80 * GB, 100 * GB, "GiB", PALETTE, 120).plain
    assert title.endswith(f"● under safe 80 GB: {(80 * GB - acct.used) / GB:.1f} GB to go")
    small_pool = 24 * GIB  # a machine smaller than the safe line
    title = bar._title(acct.used, small_pool, 80 * GB, 100 * GB, "GiB", PALETTE, 120).plain
    assert title.endswith("● under safe 80 GB (above the pool)") and "to go" not in title


def test_the_state_phrase_keeps_one_unit():
    """The lines are in decimal GB, so the amount beside one is too: "OVER AGGRESSIVE 19.7 GB by 118.1 GiB"
    and "under safe 15.8 GB: 13.1 GiB to go" mixed two units in one phrase (issue 32, Rough)."""
    bar = BudgetBar()
    small = 24 * GIB  # lines scaled to a small pool
    over = bar._title(int(22 * GIB), small, int(15.8 * GB), int(19.7 * GB), "GiB", PALETTE, 120).plain
    assert over.rstrip().endswith("■ OVER AGGRESSIVE 19.7 GB by 3.92 GB"), over
    under = bar._title(int(2.5 * GB), small, int(15.8 * GB), int(19.7 * GB), "GiB", PALETTE, 120).plain
    assert under.endswith("● under safe 15.8 GB: 13.3 GB to go"), under
    assert "GiB" not in over.split("■")[1] and "GiB" not in under.split("●")[1]


def test_over_aggressive_keeps_its_amount_in_an_80_column_terminal():
    """At 80x24 the long title left room for "■ OVER AGGRESSIVE" alone: how far over is the figure that
    says what to free, so the short title gives way to it."""
    bar = BudgetBar()
    pool = int(121.7 * GIB)
    title = bar._title(int(126.5 * GB), pool, 80 * GB, 100 * GB, "GiB", PALETTE, 78).plain
    assert title.rstrip().endswith("■ OVER AGGRESSIVE 100 GB by 26.5 GB"), title
    assert len(title) <= 78
    # Where it has the room, the long title stays.
    wide = bar._title(int(126.5 * GB), pool, 80 * GB, 100 * GB, "GiB", PALETTE, 120).plain
    assert wide.startswith("Memory pool ") and "by 26.5 GB" in wide


def test_segments_cover_the_pool_in_order():
    acct = accounting(10 * GIB, 40 * GIB)
    acct.consumers.append(Consumer(key="host-other", label="other", kind="host-other", cpu_bytes=GIB))
    acct.used += GIB
    segments = build_segments(acct, POOL, PALETTE, ColorAssigner())
    assert [s.key for s in segments] == ["container:1", "container:0", "host-other", "unattributed", "free"]
    assert sum(s.nbytes for s in segments) == POOL
    assert segments[-1].color == PALETTE.free


def test_columns_place_boundaries_where_the_bytes_say():
    acct = accounting(32 * GB, 32 * GB, unattributed=0)
    segments = build_segments(acct, POOL, PALETTE, ColorAssigner())
    cols = _columns(segments, POOL, 100)
    assert sum(cols) == 100
    assert cols == [25, 25, 50]


def test_colours_stay_with_their_consumer():
    colors = ColorAssigner()
    first = colors.assign(["a", "b", "c"], 8)
    second = colors.assign(["c", "b", "d", "a"], 8)  # reordered, one new
    assert {k: second[k] for k in "abc"} == first
    assert second["d"] not in first.values()


def test_legend_folds_small_consumers_but_keeps_unattributed_and_free():
    bar = BudgetBar()
    acct = accounting(*(GIB * (i + 1) for i in range(12)))
    bar.segments = build_segments(acct, POOL, PALETTE, ColorAssigner())
    bar.legend_lines = 2
    lines = bar._legend("GiB", 80)
    assert len(lines) == 2
    text = "\n".join(str(line) for line in lines)
    assert "more" in text and "unattributed" in text and "free" in text
    assert "c11 12.0 GiB" in text  # the largest stays named


def test_formatting():
    assert fmt_bytes(None) == "—"
    assert fmt_bytes(300 * 1024**2) == "300 MiB"
    assert fmt_bytes(int(1.5 * GIB)) == "1.5 GiB"
    assert fmt_bytes(int(1.5 * GB), "GB") == "1.5 GB"
    assert fmt_rate(1.3 * GB, "GB") == "+1.3 GB/min"
    assert fmt_rate(-5 * 1024**2) == "-5 MiB/min"
    assert fmt_rate(1000.0) == "0 MiB/min"
    assert fmt_duration(45) == "45 s" and fmt_duration(14 * 60) == "14 min"
    assert fmt_duration(125 * 60) == "2 h 05 min"
    assert sparkline([0, 50, 100], 3, 0, 100) == "▁▅█"
    assert sparkline([None, 1.0], 4) == "   █"


def test_row_trends_slope_and_forgetting():
    trends = RowTrends(window_s=300, step_s=5, min_span_s=60)
    for i in range(100):  # 100 s at 1 Hz: one point kept every 5 s
        trends.add(float(i), {"grow": 1_000_000 * i, "flat": 5})
    assert abs(trends.rate_per_min("grow") - 60_000_000) < 1
    assert trends.rate_per_min("flat") == 0
    assert trends.rate_per_min("unknown") is None
    trends.add(100.0, {"flat": 5})
    assert trends.rate_per_min("grow") is None  # gone: forgotten


def test_row_trends_need_a_minute_of_points():
    trends = RowTrends(step_s=5, min_span_s=60)
    for i in range(30):
        trends.add(float(i), {"new": i})
    assert trends.rate_per_min("new") is None


def test_the_legend_measures_each_long_name_once(monkeypatch) -> None:
    """Consumers named in 10 kB of CJK (text from outside): the legend measured every item again for each
    number of named consumers it tried, a character at a time (47 ms a bar in the hostile-text test)."""
    import rich.text

    measured: list[int] = []
    cell_len = rich.text.cell_len

    def counting(text: str) -> int:
        if len(text) > 5_000:
            measured.append(len(text))
        return cell_len(text)

    monkeypatch.setattr(rich.text, "cell_len", counting)
    bar = BudgetBar()
    acct = accounting(*(GIB * (i + 1) for i in range(12)))
    for i, consumer in enumerate(acct.consumers):
        consumer.label = f"{i}" + "训练" * 5_000
    bar.segments = build_segments(acct, POOL, PALETTE, ColorAssigner())
    bar.legend_lines = 2
    lines = bar._legend("GiB", 80)
    assert len(lines) == 2 and "more" in lines[-1].plain  # folded: every count of named ones was tried
    assert len(measured) <= 2 * len(acct.consumers), len(measured)  # each once, and once more in _wrap


def test_legend_names_the_largest_first_and_never_folds_it() -> None:
    """`■ ux-creep 0 MiB ■ ux-hog 0 MiB … +10 more 3.9 GiB` hid the 3.4 GiB hog: containers were kept
    before bigger processes, and empty ones were listed."""
    bar = BudgetBar()
    acct = accounting(0, 0, 5 * 1024**2, unattributed=GIB)
    acct.consumers += [
        Consumer(key=f"process:{i}", label=f"p{i}", kind="process", cpu_bytes=(i + 1) * 50 * 1024**2)
        for i in range(10)
    ]
    acct.consumers.append(
        Consumer(key="process:hog", label="ux-hog", kind="process", cpu_bytes=34 * GIB // 10)
    )
    acct.used = sum(c.total for c in acct.consumers) + acct.unattributed
    bar.segments = build_segments(acct, POOL, PALETTE, ColorAssigner())
    for width, lines in ((120, 2), (80, 2), (60, 1), (40, 1)):
        bar.legend_lines = lines
        text = " ".join(line.plain for line in bar._legend("GiB", width))
        assert text.startswith("■ ux-hog 3.4 GiB"), (width, text)
        assert "c0 " not in text and "c1 " not in text  # 0 bytes: not listed
    bar.legend_lines = 4
    items = [item for line in bar._legend("GiB", 200) for item in line.plain.split("  ")]
    named = [item for item in items if item.startswith("■ p") or item.startswith("■ c") or "ux-hog" in item]
    assert named[0].startswith("■ ux-hog") and named[1].startswith("■ p9") and named[-1].startswith("■ c2")
