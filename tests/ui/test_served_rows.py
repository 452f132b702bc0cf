"""A model server's row in the Containers and Processes tables, split as the budget bar splits it: one row
per loaded model right under the server's row, the server's row left with its own memory, the numbers adding
up to what it held and to the bar's segments; sorting keeps them together; no key acts on a model's row."""

from __future__ import annotations

import re

import pytest
from textual.geometry import Region
from textual.pilot import Pilot
from textual.widgets import Input

from sparktop.analysis.served import ModelPart, model_key
from sparktop.core.snapshot import GpuProcess, ProcessInfo, ServedModel, ServiceReport, process_key
from sparktop.sources.demo import DemoSource
from sparktop.ui.app import SparktopApp
from sparktop.ui.screens.confirm import ConfirmScreen
from sparktop.ui.screens.dashboard import ContainersTable, ProcessesTable
from sparktop.ui.widgets.budget_bar import BudgetBar
from tests.ui.demo_app import make_app, reset_dashboard, shared_app

SIZE = (120, 36)
GIB = 1024**3

# The checks on the servers' tables share one dashboard (the demo's servers and their models stay as it
# ticks; reset_dashboard puts the filter, the sort and the tab back); they run in the module's event loop
# (`in_module_loop`). The host-server check keeps an app on a source of its own.
in_module_loop = pytest.mark.asyncio(loop_scope="module")
servers = shared_app("servers", warmup=30, size=SIZE)


def shown_keys(table) -> list[str]:
    """Row keys in the order the table draws them."""
    return [table.coordinate_to_cell_key((i, 0)).row_key.value for i in range(table.row_count)]


def screen_lines(table) -> list[str]:
    """The table as drawn, one string per line, runs of spaces made one."""
    strips = table.render_lines(Region(0, 0, table.size.width, table.size.height))
    return [" ".join(strip.text.split()) for strip in strips]


def groups(table) -> dict[str, list[str]]:
    """Each server row's key → the model rows drawn right under it, checked to be contiguous."""
    keys = shown_keys(table)
    out: dict[str, list[str]] = {}
    current = None
    for key in keys:
        row = table._rows[key]
        if row.parent is None:
            current = key
            continue
        assert row.parent == current, f"{key} is not right under its server {row.parent}: {keys}"
        out.setdefault(current, []).append(key)
    return out


def whole(table, key: str, column: str):
    """What a server row sorts by: its text, or the sum of its numbers and its model rows' numbers."""
    value = table._rows[key].values.get(column)
    if isinstance(value, str):
        return value.lower()
    parts = [table._rows[k].values.get(column) for k, r in table._rows.items() if r.parent == key]
    numbers = [v for v in (value, *parts) if v is not None]
    return sum(numbers) if numbers else None


def original(app, key):
    return next(c for c in app.session.latest.accounting.consumers if c.key == key)


@in_module_loop
async def test_containers_tab_splits_each_server_into_its_models_as_the_bar_does(
    servers: tuple[SparktopApp, Pilot],
):
    app, pilot = servers
    await reset_dashboard(app, pilot, SIZE)
    await pilot.press("2")
    await pilot.pause()
    table = app.query_one(ContainersTable)
    snap = app.session.latest
    by_name = {c.name: f"container:{c.id}" for c in snap.containers}
    ollama, vllm = by_name["ollama"], by_name["vllm-qwen3-8b"]
    reports = {r.owner: r for r in snap.services}
    found = groups(table)
    assert set(found) == {ollama, vllm}
    assert sorted(found[ollama]) == sorted(model_key(reports[ollama], m) for m in reports[ollama].models)
    assert found[vllm] == [model_key(reports[vllm], reports[vllm].models[0])]
    segments = {s.key: s for s in app.query_one(BudgetBar).segments}
    for server, models in found.items():
        parent = table._rows[server].values
        # The server's row is what is left, its own: the bar's segment for it.
        assert parent["total"] == segments[server].nbytes
        assert parent["gpu"] == segments[server].gpu_bytes
        for key in models:
            row = table._rows[key]
            assert isinstance(row.item, ModelPart) and row.item.owner == server
            assert row.values["total"] == segments[key].nbytes
            assert row.values["gpu"] == segments[key].gpu_bytes
            assert row.values["cpu"] + row.values["gpu"] == row.values["total"]
        # ... and the rows add up to what the container holds, column by column.
        whole = original(app, server)
        assert parent["cpu"] + sum(table._rows[k].values["cpu"] for k in models) == whole.cpu_bytes
        assert parent["gpu"] + sum(table._rows[k].values["gpu"] for k in models) == whole.gpu_bytes
        assert parent["total"] + sum(table._rows[k].values["total"] for k in models) == whole.total
    # The model's name, its GPU-side size (Ollama's size_vram) and the time until Ollama unloads it.
    qwen = next(m for m in reports[ollama].models if m.name == "qwen3:32b")
    row = table._rows[model_key(reports[ollama], qwen)]
    assert row.values["name"] == " └ qwen3:32b"
    assert row.values["gpu"] == qwen.gpu_bytes and row.values["cpu"] == qwen.cpu_bytes == 0
    minutes = round((qwen.expires_at - snap.timestamp) / 60)
    assert row.values["service"] == f"unloads in {minutes} min"
    assert table._rows[found[vllm][0]].values["service"] == "reserved at start"
    # On screen: the model rows are drawn under their server, the unload time in the service column.
    lines = screen_lines(table)
    at = next(i for i, line in enumerate(lines) if line.startswith("ollama llm ollama"))
    assert all(line.startswith("└ ") for line in lines[at + 1 : at + 4])
    # CPU side, GPU side, sm (a model row is no process: —), total
    assert re.search(
        r"└ qwen3:32b unloads in \d+ min 0 B (19\.9|20\.0) GiB — (19\.9|20\.0) GiB", " ".join(lines)
    )


@in_module_loop
async def test_sorting_keeps_each_model_row_under_its_server(servers: tuple[SparktopApp, Pilot]):
    app, pilot = servers  # the shared one: reset_dashboard sorts it by total again
    await reset_dashboard(app, pilot, SIZE)
    await pilot.press("2")
    table = app.query_one(ContainersTable)
    for column in table.column_keys:
        for reverse in (False, True):
            table.sort_by(column, reverse)  # sorts the rows there and then: what is read below
            found = groups(table)  # asserts each model row sits right under its server
            assert sum(len(v) for v in found.values()) == 4, (column, reverse)
            servers = [k for k in shown_keys(table) if table._rows[k].parent is None]
            values = [whole(table, k, column) for k in servers]
            present = [v for v in values if v is not None]
            # The servers are in the column's order, each by what it holds with its models.
            assert present == sorted(present, reverse=reverse), (column, reverse)
    # Refreshes (sizes move every tick) keep them together too.
    table.sort_by("gpu", True)
    for _ in range(5):
        await app.refresh_once()
        groups(table)


@in_module_loop
async def test_filtering_by_a_model_name_shows_its_server_with_its_models(servers: tuple[SparktopApp, Pilot]):
    app, pilot = servers
    await reset_dashboard(app, pilot, SIZE)
    await pilot.press("2", "slash")
    app.query_one("#filter", Input).value = "gemma"  # as typed (test_app's test_filter_with_slash types one)
    await pilot.press("enter")
    await pilot.pause()
    table = app.query_one(ContainersTable)
    names = [table._rows[k].values["name"] for k in shown_keys(table)]
    assert names[0] == "ollama" and " └ gemma3:12b" in names and len(names) == 4


@in_module_loop
async def test_stop_keys_on_a_model_row_act_on_nothing_and_say_why(servers: tuple[SparktopApp, Pilot]):
    app, pilot = servers  # the shared one: reset_dashboard closes the dialog the last check opens
    await reset_dashboard(app, pilot, SIZE)
    await pilot.press("2")
    table = app.query_one(ContainersTable)
    keys = shown_keys(table)
    model = next(k for k in keys if table._rows[k].values["name"] == " └ gemma3:12b")
    table.move_cursor(row=keys.index(model))
    assert app.dashboard.selected_container() is None  # a model's row is no container
    for key in ("s", "S", "k", "K"):
        await pilot.press(key)  # waits until the app has handled it
        assert not isinstance(app.screen, ConfirmScreen), key
        assert app.stops.reports[-1] == (
            "gemma3:12b is a model inside ollama: select the server's row to stop it "
            "(`ollama stop gemma3:12b` unloads it alone)"
        )
    assert app.stops.pending == {}
    for _ in range(3):
        await app.refresh_once()
    assert "ollama" in {c.name for c in app.session.latest.containers}
    # On the server's row, `s` asks to stop the container itself.
    table.move_cursor(row=shown_keys(table).index(table._rows[model].parent))
    await pilot.press("s")
    assert isinstance(app.screen, ConfirmScreen)
    app.pop_screen()  # asked, not answered: nothing stopped


# --- a server running on the host: its process row is split on the Processes tab ---------------------------

SERVE_PID, RUNNER_PID = 40_001, 40_002


class _HostOllama(DemoSource):
    """The demo machine with an Ollama on the host (not in a container): `ollama serve` and one runner child
    per model, as Ollama starts them, and what its /api/ps says about the two models."""

    def sample(self):
        snap = super().sample()
        gib = GIB
        serve = ProcessInfo(pid=SERVE_PID, ppid=1, name="ollama", cmdline="/usr/local/bin/ollama serve",
                            user="ollama", rss=gib // 10, start_time=100.0)  # fmt: skip
        held = (("llama3.1:8b", gib, 5 * gib), ("gemma3:4b", gib // 2, 3 * gib))
        runners = [
            ProcessInfo(pid=RUNNER_PID + i, ppid=SERVE_PID, name="ollama", user="ollama",
                        cmdline=f"/usr/local/bin/ollama runner --model {name}", rss=rss, gpu_bytes=gpu,
                        start_time=200.0 + i)
            for i, (name, rss, gpu) in enumerate(held)
        ]  # fmt: skip
        snap.processes.extend([serve, *runners])
        for runner in runners:
            snap.gpu.gpus[0].processes.append(GpuProcess(pid=runner.pid, used_bytes=runner.gpu_bytes))
        snap.memory.available -= sum(p.rss + (p.gpu_bytes or 0) for p in (serve, *runners))
        snap.services.append(
            ServiceReport(
                collector="servers", endpoint="http://127.0.0.1:11434", server="ollama", version="0.12.6",
                owner=process_key(serve), checked_at=snap.timestamp,
                models=[
                    ServedModel(name="llama3.1:8b", gpu_bytes=5 * gib - 2**20, cpu_bytes=gib // 2,
                                expires_at=snap.timestamp + 240),
                    ServedModel(name="gemma3:4b\x1b[31m", gpu_bytes=3 * gib, cpu_bytes=0,
                                expires_at=snap.timestamp + 10 * 365 * 86400 * 10),
                ],
            )
        )  # fmt: skip
        return snap


async def test_processes_tab_splits_a_host_server_process_into_its_models():
    app = make_app("servers", warmup=3)
    app.source = _HostOllama("servers")
    async with app.run_test(size=SIZE) as pilot:
        await app.refresh_once()
        await pilot.press("3")
        await pilot.pause()
        table = app.query_one(ProcessesTable)
        serve = next(p for p in app.session.latest.processes if p.pid == SERVE_PID)
        key = process_key(serve)
        found = groups(table)
        assert list(found) == [key]  # the servers in containers are split on the Containers tab
        parts = {table._rows[k].item.name: table._rows[k] for k in found[key]}
        # The escape the server sent is drawn visible, never acted on.
        assert set(parts) == {"llama3.1:8b", "gemma3:4b^[[31m"}
        llama, gemma = parts["llama3.1:8b"], parts["gemma3:4b^[[31m"]
        assert llama.values["name"] == " └ llama3.1:8b"
        assert (llama.values["rss"], llama.values["gpu"]) == (GIB // 2, 5 * GIB - 2**20)
        assert llama.values["command"] == "llama3.1:8b (ollama model) unloads in 4 min"
        assert gemma.values["command"] == "gemma3:4b^[[31m (ollama model) stays loaded"
        assert gemma.values.get("pid") is None  # no process of its own
        # The models are taken from the server's process first, then from its runners (as in the bar):
        # every column adds up over the server's rows and its models, and matches the bar's segments.
        segments = {s.key: s for s in app.query_one(BudgetBar).segments}
        rows = [table._rows[k] for k in [key, *found[key]]]
        rows += [table._rows[k] for k in table._rows if k.startswith(f"process:{RUNNER_PID}")]
        rows += [table._rows[k] for k in table._rows if k.startswith(f"process:{RUNNER_PID + 1}")]
        for column, want in (("rss", GIB // 10 + GIB + GIB // 2), ("gpu", 8 * GIB),
                             ("total", GIB // 10 + GIB + GIB // 2 + 8 * GIB)):  # fmt: skip
            assert sum(r.values[column] or 0 for r in rows) == want, column
        for row in (llama, gemma):
            assert row.values["total"] == segments[row.key].nbytes
        assert table._rows[key].values["total"] == segments[key].nbytes == 0  # all its 0.1 GiB is llama's
        # A server row left with nothing of its own is still shown, and sorted by what it holds with its
        # models (8.1 GiB: right under the 9.0 GiB runner of the Ollama container), not by its own 0.
        keys = shown_keys(table)
        assert table.sort_column == "total" and table.sort_reverse
        assert [table._rows[k].values["total"] > 8 * GIB for k in keys[: keys.index(key)]] == [True] * 3
        assert keys.index(key) == 3
        # `k` / `K` on a model's row send nothing.
        keys = shown_keys(table)
        table.move_cursor(row=keys.index(llama.key))
        await pilot.pause()
        assert app.dashboard.selected_process() is None
        for press in ("k", "K", "s"):
            await pilot.press(press)
            await pilot.pause()
            assert not isinstance(app.screen, ConfirmScreen)
            assert app.stops.reports[-1].startswith("llama3.1:8b is a model inside ollama: select the server")
