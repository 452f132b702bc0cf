"""What the containers and processes tables show, without Textual: one `Row` of raw values per container or
process (a column's key → its value, `core/columns.py`), the text and style of each cell, and the order rows
sort in. The widget (ui/widgets/tables.py) only draws these, updating its cells in place.

A model server's row (its container, or its host process) is followed by one row per loaded model, as the
budget bar splits it (analysis/served.py): the server's row shows what is left, its own, and the rows add up
to what it held. Sorting moves a server's model rows with it, directly under it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Generic, NamedTuple, TypeVar

from sparktop.analysis.gpu_use import sm_measured
from sparktop.analysis.row_trends import process_gpu, process_total
from sparktop.analysis.served import NO_SPLIT, ModelPart, ServedSplit
from sparktop.collect.control import foreign_engine
from sparktop.core.columns import SM_COLUMN, ColumnSpec
from sparktop.core.format import NO_VALUE, fmt_cell, fmt_rate_cell
from sparktop.core.safe_text import visible
from sparktop.core.snapshot import ContainerInfo, ProcessInfo, Snapshot, container_label, process_key

T = TypeVar("T")

RateLookup = Callable[[str], float | None]  # consumer key -> bytes per minute


def unmeasurable_columns(snapshot: Snapshot) -> set[str]:
    """`sm` unless some GPU measures per-process SM utilisation."""
    return set() if sm_measured(snapshot) else {SM_COLUMN}


@dataclass
class Row(Generic[T]):
    key: str
    item: T
    values: dict[str, Any]
    search: str  # lower-case text the filter matches against
    styles: dict[str, str] = field(default_factory=dict)
    minor: bool = False  # holds no memory (a kernel thread, an empty container): hidden unless asked for
    parent: str | None = None  # a model's row: the key of its server's row, which it stays under
    head: bool = False  # a server's row with model rows under it

    @property
    def group(self) -> str | None:
        """The key of the server row a row is sorted with (its own for the server), or None."""
        return self.parent if self.parent is not None else (self.key if self.head else None)


# -- cells -------------------------------------------------------------------------------------------------


class CellText(NamedTuple):
    text: str
    style: str
    right: bool  # numbers are right-aligned


def cell_text(
    spec: ColumnSpec, value: Any, units: str, style: str, *, warn_rate: float, warn_color: str
) -> CellText:
    """How a raw value is shown in `spec`'s column: sizes in `units`, each naming its unit; a growth rate
    at or above `warn_rate` (bytes/min) in `warn_color`, one below 1 MiB/min dim; long text cut with "…".
    `style` (the row's style for the cell) wins over those colours."""
    if spec.kind == "bytes":
        return CellText(fmt_cell(value, units), style, True)
    if spec.kind == "rate":
        if value is not None and value >= warn_rate:
            style = style or f"bold {warn_color}"
        elif value is None or abs(value) < 1024**2:
            style = style or "dim"
        text = fmt_rate_cell(value, units) if value is not None else "·"  # ·: not known yet
        return CellText(text, style, True)
    if spec.kind == "percent":
        return CellText(NO_VALUE if value is None else f"{value:.0f}", style, True)
    if spec.kind == "number":
        return CellText(NO_VALUE if value is None else str(value), style, True)
    text = str(value) if value is not None else ""
    if spec.max_width and len(text) > spec.max_width:
        text = text[: spec.max_width - 1] + "…"
    return CellText(text, style, False)


# -- sorting -----------------------------------------------------------------------------------------------


def value_sort_key(value: Any) -> tuple[int, Any]:
    # Missing values sort as the smallest: at the bottom of a largest-first table.
    if value is None:
        return (0, 0)
    if isinstance(value, str):
        return (1, value.lower())
    return (1, value)


def cell_sort_key(cell: Any) -> tuple:
    """A cell (anything with the `sort_value` it shows) sorts by that value."""
    return (value_sort_key(cell.sort_value),)


def grouped_sort_key(cells: Iterable[Any], reverse: bool) -> Callable[[Any], tuple]:
    """The sort key for a column whose `cells` include a server's group of rows (cells with `group`, the
    server row's key, and `child`, True on a model's row). A group sorts as one, by what the whole server
    holds (the sum of its rows' numbers: its own row shows only the rest) or by the server's text; in the
    group, the server's row comes first and its model rows follow by their own cells, whichever way
    (`reverse`) it is sorted. Other cells sort by their own value."""
    whole: dict[str, Any] = {}
    for cell in cells:
        group = getattr(cell, "group", None)
        if group is None:
            continue
        value, child = cell.sort_value, cell.child
        if not child:
            whole.setdefault(group, None)
        if isinstance(value, str):
            if not child:  # text: the server's own
                whole[group] = value
        elif isinstance(value, int | float) and not isinstance(whole.get(group), str):
            whole[group] = (whole.get(group) or 0) + value
    # `reverse` flips the whole key: the server's rank must then be the higher one to stay first.
    server_rank, model_rank = (1, 0) if reverse else (0, 1)

    def key(cell: Any) -> tuple:
        group = cell.group
        if group is None or group not in whole:
            return (value_sort_key(cell.sort_value),)
        rank = model_rank if cell.child else server_rank
        return (value_sort_key(whole[group]), group, rank, value_sort_key(cell.sort_value))

    return key


# -- rows --------------------------------------------------------------------------------------------------


def _part_name(part: ModelPart) -> str:
    # Model names come from the server's API: plain text with its controls made visible, never markup.
    return f" └ {visible(part.name)}"


def container_rows(
    snapshot: Snapshot, rate: RateLookup, served: ServedSplit = NO_SPLIT
) -> list[Row[ContainerInfo | ModelPart]]:
    """One row per container; under a model server's container one row per loaded model (`served`, from
    `served_split`), the container's CPU, GPU, total and PSS then being what is left: its own."""
    pss: dict[str, int] = {}
    pss_missing: set[str] = set()
    for proc in snapshot.processes:
        if proc.container_id:
            if proc.pss is None:
                pss_missing.add(proc.container_id)
            else:
                pss[proc.container_id] = pss.get(proc.container_id, 0) + proc.pss
    consumers = {c.key: c for c in snapshot.accounting.consumers} if snapshot.accounting else {}
    rows: list[Row[ContainerInfo | ModelPart]] = []
    asking_docker = snapshot.names_pending
    for c in snapshot.containers:
        key = f"container:{c.id}"
        mem = c.memory
        consumer = consumers.get(key)
        cpu = consumer.cpu_bytes if consumer else (mem.working_set if mem else None)
        # Without a GPU there is no GPU figure: "—", as on the processes tab, not a measured-looking 0.
        # On a discrete GPU the container's GPU memory is its own (device_gpu_bytes), not the pool's.
        held = consumer.gpu_bytes + consumer.device_gpu_bytes if consumer else c.gpu_bytes
        gpu = held if snapshot.gpu.available else None
        # A container of an engine sparktop is not connected to: seen, not stoppable; the row says whose.
        engine = foreign_engine(c, snapshot.docker) if snapshot.source == "live" else None
        # Before Docker answered (the quick first sample), what only it knows is "…", not blank.
        unknown = "…" if asking_docker and c.runtime == "docker" else ""
        label = container_label(c, asking_docker)
        values = {
            "name": f"{label} (not connected)" if engine else label,
            "project": c.compose_project or unknown,
            "service": c.compose_service or unknown,
            "status": c.status or ("not connected" if engine else unknown),
            "image": c.image or unknown,
            "id": c.short_id,
            "cpu": cpu,
            "gpu": gpu,
            "sm": c.gpu_sm_pct,
            "total": (cpu or 0) + (gpu or 0),
            "trend": rate(key),
            # PSS only where every process of the container has one, else it would under-count.
            "pss": pss.get(c.id) if c.id not in pss_missing else None,
            "anon": mem.anon if mem else None,
            "file": mem.file if mem else None,
            "shmem": mem.shmem if mem else None,
            "limit": mem.limit if mem else None,
            "pids": len(c.pids),
        }
        search = " ".join(str(values[k]) for k in ("name", "project", "service", "image", "id")).lower()
        minor = not values["total"] and not c.pids
        parts = served.parts.get(key, ())
        if parts or key in served.taken:  # `minor` stays what the whole container holds
            search = _take_parts(values, served.taken.get(key, (0, 0)), ("cpu", "pss"), search, parts)
        rows.append(Row(key=key, item=c, values=values, search=search, minor=minor, head=bool(parts)))
        for part in parts:
            part_values = {
                "name": _part_name(part),
                "status": "loaded",
                "service": part.note,  # shown by default, where status is not
                "cpu": part.cpu_bytes,
                "gpu": part.gpu_bytes if gpu is not None else None,
                "total": part.total,
                "pss": part.cpu_bytes if values["pss"] is not None else None,
            }
            rows.append(Row(key=part.key, item=part, values=part_values, search=search, parent=key))
    return rows


def _take_parts(
    values: dict[str, Any],
    taken: tuple[int, int],
    cpu_columns: tuple[str, ...],
    search: str,
    parts: Iterable[ModelPart],
) -> str:
    """A server's row left with its own memory: what its models took comes off the CPU-side columns, the
    GPU column and the total. Returns its search text with the model names (filtering by one finds it)."""
    cpu, gpu = taken
    for column in cpu_columns:
        if values.get(column) is not None:
            values[column] = max(0, values[column] - cpu)
    if values.get("gpu") is not None:
        values["gpu"] = max(0, values["gpu"] - gpu)
    values["total"] = max(0, values["total"] - cpu - gpu)
    return " ".join([search, *(part.name.lower() for part in parts)])


def process_rows(
    snapshot: Snapshot, rate: RateLookup, served: ServedSplit = NO_SPLIT
) -> list[Row[ProcessInfo | ModelPart]]:
    """One row per process; under a model server's host process one row per loaded model (`served`), its
    RSS, PSS, GPU and total then being what is left (a server in a container is split on the Containers
    tab, as in the budget bar)."""
    names = {c.id: container_label(c, snapshot.names_pending) for c in snapshot.containers}
    gpu_by_pid = snapshot.gpu.gpu_bytes_by_pid()
    rows: list[Row[ProcessInfo | ModelPart]] = []
    for p in snapshot.processes:
        key = process_key(p)
        gpu = process_gpu(p, gpu_by_pid)
        container = names.get(p.container_id, p.container_id[:12]) if p.container_id else ""
        values = {
            "pid": p.pid,
            "name": p.name,
            "container": container,
            "user": p.user or "",
            "cpu_pct": p.cpu_percent,
            "rss": p.rss,
            "pss": p.pss,
            "gpu": gpu,
            "sm": p.gpu_sm_pct,
            "total": process_total(p, gpu_by_pid),
            "trend": rate(key),
            "command": p.cmdline or p.name,
        }
        search = f"{p.pid} {p.name} {container} {p.user or ''} {p.cmdline}".lower()
        # Kernel threads (children of kthreadd, pid 2) and processes holding nothing: clutter by default.
        minor = p.pid == 2 or p.ppid == 2 or not values["total"]
        # A PSS from before the process's RSS moved: shown dim, and the total is the fresh RSS.
        styles = {"pss": "dim"} if p.pss_stale else {}
        parts = served.parts.get(key, ())
        if parts or key in served.taken:  # `minor` stays what the whole process holds
            search = _take_parts(values, served.taken.get(key, (0, 0)), ("rss", "pss"), search, parts)
        rows.append(
            Row(key=key, item=p, values=values, search=search, minor=minor, styles=styles, head=bool(parts))
        )
        for part in parts:
            part_values = {
                "name": _part_name(part),
                "container": container,
                "rss": part.cpu_bytes,
                "pss": part.cpu_bytes if values["pss"] is not None else None,
                "gpu": part.gpu_bytes if snapshot.gpu.available else None,  # from a runner, say
                "total": part.total,
                "command": " ".join(
                    x for x in (visible(part.name), f"({part.server} model)", part.note) if x
                ),
            }
            rows.append(Row(key=part.key, item=part, values=part_values, search=search, parent=key))
    return rows


__all__ = [
    "CellText",
    "RateLookup",
    "Row",
    "cell_sort_key",
    "cell_text",
    "container_rows",
    "grouped_sort_key",
    "process_rows",
    "unmeasurable_columns",
    "value_sort_key",
]
