"""The containers and processes tables' rows without Textual (sparktop/session/rows.py): what the dashboard
tests in tests/ui do not pin down already (a container's PSS, an empty container, a cell's text and colour,
where a missing value sorts)."""

from __future__ import annotations

from sparktop.core.columns import CONTAINER_COLUMN_SPECS, PROCESS_COLUMN_SPECS
from sparktop.core.format import NO_VALUE, fmt_rate_cell
from sparktop.core.snapshot import CgroupMemory, ContainerInfo, ProcessInfo, Snapshot
from sparktop.session.rows import CellText, cell_text, container_rows, process_rows, value_sort_key
from tests.fixtures.snapshots import snapshot as shared_snapshot

MIB = 1024**2
GIB = 1024**3
CID = "c" * 64


def snapshot(containers: list[ContainerInfo], processes: list[ProcessInfo]) -> Snapshot:
    """A machine without a GPU, not yet accounted (the session accounts it): the tables' raw input."""
    return shared_snapshot(
        t=0.0,
        source="demo",
        total=64 * GIB,
        available=32 * GIB,
        free=16 * GIB,
        no_gpu="no GPU in the test",
        containers=containers,
        processes=processes,
    )


def no_rate(key: str) -> float | None:
    return None


def web_container(pids: list[int], working_set: int = 400 * MIB) -> ContainerInfo:
    memory = CgroupMemory(usage=working_set + 100 * MIB, working_set=working_set, anon=working_set)
    return ContainerInfo(id=CID, name="web", memory=memory, pids=pids)


def test_a_containers_pss_is_the_sum_of_its_processes_only_when_each_has_one() -> None:
    procs = [
        ProcessInfo(pid=10, name="nginx", rss=300 * MIB, pss=200 * MIB, container_id=CID),
        ProcessInfo(pid=11, name="worker", rss=100 * MIB, pss=50 * MIB, container_id=CID),
        ProcessInfo(pid=12, name="bash", rss=8 * MIB),  # on the host: not the container's
    ]
    (row,) = container_rows(snapshot([web_container([10, 11])], procs), no_rate)
    assert row.values["pss"] == 250 * MIB
    # Its CPU side is the cgroup's working set (no accounting yet); no GPU: no GPU figure, not 0.
    assert row.values["cpu"] == 400 * MIB and row.values["gpu"] is None and row.values["total"] == 400 * MIB
    procs[1].pss = None  # not read for this one: a sum over the others would under-count the container
    (row,) = container_rows(snapshot([web_container([10, 11])], procs), no_rate)
    assert row.values["pss"] is None


def test_an_empty_container_is_minor_and_one_with_a_process_is_not() -> None:
    empty = container_rows(snapshot([web_container([], working_set=0)], []), no_rate)[0]
    assert empty.minor and empty.values["total"] == 0
    idle = container_rows(snapshot([web_container([10], working_set=0)], []), no_rate)[0]
    assert not idle.minor  # holds nothing yet runs a process: shown
    busy = container_rows(snapshot([web_container([])], []), no_rate)[0]
    assert not busy.minor  # holds memory, though its processes are not seen


def test_a_trend_cell_warns_from_the_warning_rate_and_dims_what_is_noise() -> None:
    trend = PROCESS_COLUMN_SPECS["trend"]

    def shown(value: float | None, style: str = "") -> CellText:
        return cell_text(trend, value, "GiB", style, warn_rate=100 * MIB, warn_color="red")

    assert shown(None) == CellText("·", "dim", True)  # not known yet
    assert shown(100 * MIB) == CellText(fmt_rate_cell(100 * MIB, "GiB"), "bold red", True)
    assert shown(50 * MIB).style == "" and shown(-50 * MIB).style == ""  # moving, below the warning
    assert shown(512 * 1024).style == "dim" and shown(-512 * 1024).style == "dim"  # under 1 MiB/min
    assert shown(200 * MIB, "italic").style == "italic"  # the row's own style for the cell wins


def test_text_is_cut_to_its_columns_width_and_a_missing_number_is_a_dash() -> None:
    name = CONTAINER_COLUMN_SPECS["name"]
    width = name.max_width
    assert width is not None

    def text(spec_key: str, value: object, specs: dict = PROCESS_COLUMN_SPECS) -> CellText:
        return cell_text(specs[spec_key], value, "GiB", "", warn_rate=100 * MIB, warn_color="red")

    assert text("name", "x" * width, CONTAINER_COLUMN_SPECS).text == "x" * width
    cut = text("name", "x" * (width + 1), CONTAINER_COLUMN_SPECS).text
    assert cut == "x" * (width - 1) + "…" and len(cut) == width
    assert text("user", None) == CellText("", "", False)
    assert text("pid", None) == CellText(NO_VALUE, "", True)
    assert text("sm", None) == CellText(NO_VALUE, "", True)
    assert text("cpu_pct", 12.6) == CellText("13", "", True)


def test_a_missing_value_sorts_below_every_number_and_text_ignores_case() -> None:
    assert sorted([3, None, 10, 0, -1], key=value_sort_key, reverse=True) == [10, 3, 0, -1, None]
    assert sorted(["beta", None, "Alpha"], key=value_sort_key) == [None, "Alpha", "beta"]


def test_a_model_parts_name_is_shown_visible_however_the_part_was_built() -> None:
    """A model's name comes from its server's API. The snapshot's model makes it visible, but a part is a
    plain dataclass: the rows make its name visible again, for whatever builds one without the model."""
    from sparktop.analysis.served import ModelPart, ServedSplit
    from sparktop.core.snapshot import process_key

    server = ProcessInfo(pid=10, name="ollama", rss=2 * GIB, cmdline="ollama serve")
    hostile = "\x1b]2;owned\x07[b]evil"
    shown_name = "^[]2;owned^G[b]evil"
    for owner, build in ((f"container:{CID}", container_rows), (process_key(server), process_rows)):
        part = ModelPart("model:x:evil", hostile, "ollama", owner, 0, GIB, unload_in_s=None)
        served = ServedSplit({owner: [part]}, {owner: (0, GIB)})
        rows = build(snapshot([web_container([])], [server]), no_rate, served)
        (values,) = [row.values for row in rows if row.item is part]
        assert values["name"] == f" └ {shown_name}", build.__name__
        if "command" in values:  # the processes table's command column
            assert values["command"] == f"{shown_name} (ollama model)", values["command"]
