"""The Models tab on the demo's model servers, and a server's text shown as plain text."""

from __future__ import annotations

from sparktop.core.snapshot import ServedModel, ServiceReport
from sparktop.sources.demo import DemoSource
from tests.fixtures.demo_session import demo_session
from tests.ui.demo_app import make_app
from tests.ui.frame import budget_bar, models_panel, pressure_panel

# What the Models tab says is read from its panel over the demo's session (tests/ui/frame.py), laid out at
# the width it has in a 120-column terminal; the tests of its layout, its keys and its glyphs start an app.
# (What-if planning with a peak measured here, and `m`, is test_whatif's
# test_whatif_plans_with_the_measured_peak_and_m_switches_back, on that module's shared tab.)
WIDTH = 118  # the Models panel's width in a 120-column terminal


def test_models_tab_lists_every_served_model() -> None:
    session = demo_session("servers", warmup=30).session
    text = models_panel(session).text_at(WIDTH).plain
    for name in ("qwen3:32b", "gemma3:12b", "nomic-embed-text:latest", "Qwen/Qwen3-8B"):
        assert name in text
    assert "ollama 0.12.6" in text and "vllm 0.11.0" in text
    assert "vllm:kv_cache_usage_perc" in text  # which version gave what
    bar = budget_bar(session)
    assert any(s.label == "qwen3:32b (ollama)" for s in bar.segments)
    assert session.latest is not None and sum(s.nbytes for s in bar.segments) == session.latest.memory.total


def test_cuda_free_shown_next_to_available() -> None:
    assert "CUDA free" in str(pressure_panel(demo_session("servers", warmup=30).session).render())


class _Hostile(DemoSource):
    def sample(self):
        snap = super().sample()
        snap.services.append(
            ServiceReport(
                collector="servers",
                endpoint="http://127.0.0.1:9999",
                server="ollama",
                models=[ServedModel(name="[bold red]pwned[/]", gpu_bytes=1)],
                error="ollama at http://127.0.0.1:9999: [link=x]HTTP 500[/link]",
            )
        )
        return snap


def test_server_text_is_not_markup() -> None:
    run = demo_session(warmup=3)
    run.session.ingest(_Hostile("default").sample())  # the next tick comes from a server that answers so
    text = models_panel(run.session).text_at(WIDTH)
    assert "[bold red]pwned[/]" in text.plain
    assert "[link=x]HTTP 500[/link]" in text.plain


def test_demo_contention_shows_the_measured_slowdown_in_the_models_tab() -> None:
    run = demo_session("contention", warmup=60)  # a minute of vLLM alone; the training run starts now
    assert "slower since" not in models_panel(run.session).text_at(WIDTH).plain
    for _ in range(25):
        run.sample()
    text = models_panel(run.session).text_at(WIDTH).plain
    assert (
        "Qwen/Qwen3-8B 2." in text
        and "× slower since ssd-tetris-train-1 started (planner: 2.0–2.35×)" in text
    )


async def test_the_slowdown_marker_is_a_glyph_common_fonts_have() -> None:
    """The measured slowdown's marker was ⏷ (U+23F7), which no common monospace font has: Chromium drew
    screenshots/contention-models.svg's as a missing-glyph box (issue 32, Rough). Every character the tab
    draws must be in DejaVu Sans Mono or Liberation Mono, the fonts a Linux browser falls back to."""
    import shutil
    import subprocess

    from tests.ui.demo_app import screen_text

    assert shutil.which("fc-list"), "this test needs fontconfig's fc-list (Chromium's packages bring it)"
    # 100 samples: the training run starts at 60 s and the slowdown is measured from ~85 s (150 drew the same
    # characters for 0.08 s more of CPU); "slower since" below fails if it is not on screen yet.
    app = make_app(scenario="contention", warmup=100)
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.press("5")
        await pilot.pause()
        text = screen_text(app)
    assert "slower since" in text, text  # the marker is on screen
    families = ("DejaVu Sans Mono", "Liberation Mono")
    missing = []
    for char in sorted({c for c in text if ord(c) > 127 and c != "\xa0"}):
        found = subprocess.run(
            ["fc-list", f":charset={ord(char):x}", "family"], capture_output=True, text=True, timeout=30
        ).stdout
        if not any(family in found for family in families):
            missing.append(f"{char} U+{ord(char):04X}")
    assert not missing, missing


def test_a_narrow_models_tab_drops_whole_columns() -> None:
    """At 80x24 the Models table ended in "run/w…" and a column of "…" (issue 32, Rough): where the width
    is short, whole columns go, rightmost first, and server, model, CPU and GPU stay. Read from the panel at
    the width it has in a 60- and an 80-column terminal (two less, as WIDTH at 120); the table fits it."""
    session = demo_session("servers", warmup=30).session
    for columns in (60, 80):
        width = columns - 2
        lines = models_panel(session).text_at(width).plain.splitlines()
        header = next(line for line in lines if line.startswith("server "))
        assert header.split()[:4] == ["server", "model", "CPU", "GPU"], (columns, header)
        assert "…" not in header, (columns, header)
        rows = [line for line in lines if line.startswith(("ollama ", "vllm "))]
        assert rows and not any(line.rstrip().endswith("…") for line in rows), (columns, rows)
        table = [header, *rows]  # (the servers' reports under it are prose: the panel wraps them)
        assert all(len(line.rstrip()) <= width for line in table), (columns, "the table fits", table)
