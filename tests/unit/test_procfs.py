"""/proc/meminfo, PSI and /proc/stat parsing: real-shaped files, malformed and truncated ones, and fuzzing."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sparktop.collect.procfs import (
    CpuSampler,
    ProcReadError,
    parse_meminfo,
    parse_pressure,
    read_meminfo,
    read_pressure,
)
from sparktop.core.snapshot import HostMemory
from tests.fixtures.trees import ProcTree, meminfo_text, proc_stat_text, psi_text

KB = 1024

# --- meminfo ---------------------------------------------------------------------------------------------


def test_meminfo_fields_in_bytes(tmp_path: Path) -> None:
    ProcTree(
        tmp_path,
        meminfo=meminfo_text(
            total_kb=125_000_000,
            free_kb=20_000_000,
            available_kb=90_000_000,
            cached_kb=60_000_000,
            buffers_kb=1_000,
            shmem_kb=2_000_000,
            sreclaimable_kb=3_000_000,
            swap_total_kb=16_000_000,
            swap_free_kb=15_000_000,
        ),
    )
    mem = read_meminfo(tmp_path)
    assert mem == HostMemory(
        total=125_000_000 * KB,
        available=90_000_000 * KB,
        free=20_000_000 * KB,
        cached=60_000_000 * KB,
        buffers=1_000 * KB,
        shmem=2_000_000 * KB,
        sreclaimable=3_000_000 * KB,
        swap_total=16_000_000 * KB,
        swap_free=15_000_000 * KB,
    )
    assert mem.used == (125_000_000 - 90_000_000) * KB


def test_meminfo_of_this_machine_parses() -> None:
    mem = read_meminfo()
    assert mem.total > 0
    assert 0 <= mem.available <= mem.total
    assert mem.used == mem.total - mem.available


def test_meminfo_without_memavailable_is_estimated_and_said(tmp_path: Path) -> None:
    ProcTree(
        tmp_path,
        meminfo=meminfo_text(
            total_kb=1_000_000,
            free_kb=100_000,
            available_kb=None,
            cached_kb=300_000,
            buffers_kb=10_000,
            shmem_kb=50_000,
            sreclaimable_kb=40_000,
        ),
    )
    notes: list[str] = []
    mem = read_meminfo(tmp_path, notes=notes)
    assert mem.available == (100_000 + 10_000 + 300_000 - 50_000 + 40_000) * KB
    assert len(notes) == 1 and "MemAvailable" in notes[0] and "meminfo" in notes[0]
    # without a notes list it still works
    assert read_meminfo(tmp_path).available == mem.available


def test_meminfo_estimate_is_clamped_to_free_and_total() -> None:
    text = "MemTotal: 1000 kB\nMemFree: 900 kB\nCached: 5000 kB\n"
    assert parse_meminfo(text).available == 1000 * KB
    text = "MemTotal: 1000 kB\nMemFree: 100 kB\nShmem: 5000 kB\n"
    assert parse_meminfo(text).available == 100 * KB


def test_meminfo_missing_file_names_the_file(tmp_path: Path) -> None:
    with pytest.raises(ProcReadError) as err:
        read_meminfo(tmp_path)
    msg = str(err.value)
    assert str(tmp_path / "meminfo") in msg and "\n" not in msg


def test_meminfo_directory_instead_of_file(tmp_path: Path) -> None:
    (tmp_path / "meminfo").mkdir()
    with pytest.raises(ProcReadError, match="meminfo"):
        read_meminfo(tmp_path)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "garbage\n\x00\x01",
        "MemFree: 100 kB\n",  # no MemTotal
        "MemTotal: 100 kB\n",  # no MemFree
        "MemTotal: lots kB\nMemFree: 1 kB\n",
        "MemTotal: -5 kB\nMemFree: 1 kB\n",
        "MemTotal: 0 kB\nMemFree: 0 kB\n",
        "MemTotal: 10 MB\nMemFree: 1 kB\n",  # unknown unit
        meminfo_text()[:7],  # truncated inside the first line
    ],
)
def test_meminfo_malformed_raises_one_line(text: str) -> None:
    with pytest.raises(ProcReadError) as err:
        parse_meminfo(text, "/proc/meminfo")
    assert "/proc/meminfo" in str(err.value) and "\n" not in str(err.value)


def test_meminfo_truncated_after_the_required_lines_still_parses() -> None:
    full = meminfo_text()
    cut = full[: full.index("Buffers")]
    mem = parse_meminfo(cut)
    assert mem.total == 16 * 1024 * 1024 * KB and mem.cached == 0


def test_meminfo_ignores_bad_optional_lines_and_duplicates() -> None:
    text = (
        "MemTotal: 1000 kB\nMemFree: 10 kB\nMemAvailable: 500 kB\nCached: x kB\nCached 7 kB\nMemTotal: 5 kB\n"
    )
    mem = parse_meminfo(text)
    assert (mem.total, mem.available, mem.cached) == (1000 * KB, 500 * KB, 0)


_KEYS = [
    "MemTotal",
    "MemFree",
    "MemAvailable",
    "Cached",
    "Buffers",
    "Shmem",
    "SReclaimable",
    "SwapTotal",
    "SwapFree",
    "Active(anon)",
    "HugePages_Total",
    "Bogus",
]
_line = st.one_of(
    st.builds(
        lambda k, v, u: f"{k}:{' ' * 3}{v}{u}",
        st.sampled_from(_KEYS),
        st.one_of(st.integers(-(2**70), 2**70), st.text(max_size=6)),
        st.sampled_from([" kB", "", " MB", "kB", " kB extra"]),
    ),
    st.text(max_size=40),
)


@settings(max_examples=50, deadline=None)
@given(st.lists(_line, max_size=15))
def test_meminfo_parser_never_raises_anything_else(lines: list[str]) -> None:
    try:
        mem = parse_meminfo("\n".join(lines))
    except ProcReadError:
        return
    assert mem.total > 0
    for name in ("total", "available", "free", "cached", "buffers", "shmem", "sreclaimable"):
        assert getattr(mem, name) >= 0
    assert mem.used >= 0


@settings(max_examples=50, deadline=None)
@given(st.integers(1, 2**50), st.integers(0, 2**50), st.integers(0, 2**50))
def test_meminfo_round_trip(total: int, free: int, available: int) -> None:
    text = meminfo_text(total_kb=total, free_kb=free, available_kb=available)
    mem = parse_meminfo(text)
    assert (mem.total, mem.free, mem.available) == (total * KB, free * KB, available * KB)


# --- PSI ----------------------------------------------------------------------------------------------------


def test_pressure_some_and_full(tmp_path: Path) -> None:
    path = tmp_path / "memory"
    path.write_text(psi_text((1.5, 2.25, 0.5), (0.25, 0.0, 0.01), some_total=123456, full_total=789))
    p = read_pressure(path)
    assert p is not None and p.some is not None and p.full is not None
    assert (p.some.avg10, p.some.avg60, p.some.avg300, p.some.total_us) == (1.5, 2.25, 0.5, 123456)
    assert (p.full.avg10, p.full.total_us) == (0.25, 789)


def test_pressure_without_full_line() -> None:
    p = parse_pressure(psi_text(full=None))
    assert p is not None and p.some is not None and p.full is None


def test_pressure_missing_file_is_none(tmp_path: Path) -> None:
    assert read_pressure(tmp_path / "nope") is None
    (tmp_path / "dir").mkdir()
    assert read_pressure(tmp_path / "dir") is None


def test_pressure_of_this_machine() -> None:
    p = read_pressure(Path("/proc/pressure/memory"))
    if Path("/proc/pressure/memory").exists():
        assert p is not None and p.some is not None


@pytest.mark.parametrize(
    "text, some, full",
    [
        ("", False, False),
        ("garbage", False, False),
        ("some avg10=1.00 avg60=2.00 avg300=3.00\n", False, False),  # no total
        (
            "some avg10=x avg60=2.00 avg300=3.00 total=5\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=1\n",
            False,
            True,
        ),
        ("some avg10=nan avg60=2.00 avg300=3.00 total=5\n", False, False),
        ("some avg10=-1 avg60=2.00 avg300=3.00 total=5\n", False, False),
        ("some avg10=1.00 avg60=2.00 avg300=3.00 total=-5\n", False, False),
        ("some avg10=1.00 avg60=2.00 avg300=3.00 total=5\nfull avg10=0.", True, False),  # truncated
        ("some avg10=1.00 avg60=2.00 avg300=3.00 total=5 extra=1 junk\n", True, False),
    ],
)
def test_pressure_malformed_lines_are_ignored(text: str, some: bool, full: bool) -> None:
    p = parse_pressure(text)
    if not (some or full):
        assert p is None
    else:
        assert p is not None
        assert (p.some is not None, p.full is not None) == (some, full)


@settings(max_examples=50, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.text(max_size=60),
            st.builds(
                lambda kind, a, b, c, t: f"{kind} avg10={a} avg60={b} avg300={c} total={t}",
                st.sampled_from(["some", "full", "other"]),
                st.one_of(st.floats(allow_nan=True), st.text(max_size=4)),
                st.floats(min_value=0, max_value=100),
                st.floats(min_value=0, max_value=100),
                st.one_of(st.integers(-10, 2**70), st.text(max_size=3)),
            ),
        ),
        max_size=4,
    )
)
def test_pressure_parser_never_raises(lines: list[str]) -> None:
    p = parse_pressure("\n".join(lines))
    if p is not None:
        for line in (p.some, p.full):
            if line is not None:
                assert all(math.isfinite(v) and v >= 0 for v in (line.avg10, line.avg60, line.avg300))
                assert line.total_us >= 0


# --- CPU ----------------------------------------------------------------------------------------------------


def test_cpu_percent_from_deltas(tmp_path: Path) -> None:
    proc = ProcTree(tmp_path)
    proc.set_cpu((100, 0, 100, 800, 0, 0, 0, 0, 0, 0))
    cpu = CpuSampler(tmp_path)
    assert cpu.percent() is None
    assert cpu.cpu_count == 4
    # +300 busy (user 200, system 50, irq 50), +700 idle (600 idle + 100 iowait)
    proc.set_cpu((300, 0, 150, 1400, 100, 50, 0, 0, 0, 0))
    assert cpu.percent() == pytest.approx(30.0)


def test_cpu_percent_same_tick_repeats_last_figure(tmp_path: Path) -> None:
    proc = ProcTree(tmp_path)
    proc.set_cpu((100, 0, 0, 100, 0, 0, 0, 0))
    cpu = CpuSampler(tmp_path)
    cpu.percent()
    assert cpu.percent() is None  # nothing elapsed and nothing measured yet
    proc.set_cpu((150, 0, 0, 150, 0, 0, 0, 0))
    assert cpu.percent() == pytest.approx(50.0)
    assert cpu.percent() == pytest.approx(50.0)


def test_cpu_guest_time_is_not_counted_twice(tmp_path: Path) -> None:
    proc = ProcTree(tmp_path)
    proc.set_cpu((0, 0, 0, 0, 0, 0, 0, 0, 0, 0))
    cpu = CpuSampler(tmp_path)
    cpu.percent()
    proc.set_cpu((50, 0, 0, 50, 0, 0, 0, 0, 50, 0))  # guest is part of user already
    assert cpu.percent() == pytest.approx(50.0)


def test_cpu_unreadable_or_malformed(tmp_path: Path) -> None:
    cpu = CpuSampler(tmp_path / "missing")
    with pytest.raises(ProcReadError, match="stat"):
        cpu.percent()
    ProcTree(tmp_path, stat="intr 1 2 3\n")
    with pytest.raises(ProcReadError, match="no cpu line"):
        CpuSampler(tmp_path).percent()
    (tmp_path / "stat").write_text("cpu  1 2 x 4\n")
    with pytest.raises(ProcReadError):
        CpuSampler(tmp_path).percent()


def test_cpu_of_this_machine() -> None:
    cpu = CpuSampler()
    assert cpu.percent() is None
    sum(i * i for i in range(300_000))  # burn a few ms so at least one tick passes
    value = cpu.percent()
    assert value is None or 0.0 <= value <= 100.0
    assert cpu.cpu_count is not None and cpu.cpu_count >= 1


def test_proc_stat_fixture_round_trip(tmp_path: Path) -> None:
    (tmp_path / "stat").write_text(proc_stat_text((1, 2, 3, 4, 5, 6, 7, 8, 9, 10), ncpu=2))
    cpu = CpuSampler(tmp_path)
    cpu.percent()
    assert cpu.cpu_count == 2
