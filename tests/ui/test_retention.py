"""Long sessions: a tab switch must not leave widgets behind (issue 13 item 12).

Textual's Footer rebuilds its keys on every focus change; the removed keys stayed referenced through the
Footer's `compact` watchers (~0.45 MB a switch). Their rendered lines stayed too, in the `StylesCache`
objects Textual's `get_inner_outer` lru_cache keeps (Textual issue #6665). The RSS figures are in
bench/bench_soak.py; this counts the objects themselves, which is exact and quick."""

from __future__ import annotations

import gc

from textual._styles_cache import StylesCache
from textual.widget import Widget
from textual.widgets._footer import FooterKey

from tests.ui.demo_app import make_app


def detached_widgets() -> tuple[int, int]:
    """Widgets, and footer keys among them, no longer in any DOM but still alive (one collection and one
    pass over the worker's objects for both). Counted before and after, so what other tests in the same
    worker process left behind does not count against this one."""
    gc.collect()
    detached = [o for o in gc.get_objects() if isinstance(o, Widget) and not o.is_attached]
    return len(detached), sum(1 for o in detached if isinstance(o, FooterKey))


def styles_caches_without_a_widget() -> int:
    """`StylesCache` objects (each widget has one, with its rendered lines) beyond the widgets alive: the
    rendered lines of widgets that are gone. Other tests' leftovers only add to it, so 0 means none."""
    gc.collect()
    objects = gc.get_objects()
    caches = sum(1 for o in objects if isinstance(o, StylesCache))
    widgets = sum(1 for o in objects if isinstance(o, Widget))
    return caches - widgets


async def test_tab_switches_leave_no_widgets_and_no_rendered_lines_behind() -> None:
    app = make_app(warmup=3)
    async with app.run_test(size=(80, 24)) as pilot:  # the smallest dashboard: leaks do not depend on it
        for key in "45":  # the tabs switched between below, each drawn once: what stays is the working set
            await pilot.press(key)
        await pilot.pause()
        before, keys_before = detached_widgets()
        # A switch to a tab with other keys rebuilds the footer's keys and draws their lines, and a leak keeps
        # every rebuild's. Only the What-if tab (4) shows other keys than the rest: 5 -> 4 -> 5 rebuilds twice
        # (the loop went 3 -> 4 -> 5, and before that round all five tabs twice, ~0.3 s of CPU a switch in a
        # loaded worker, for the same rebuilds).
        for key in "45":
            await pilot.press(key)
            await pilot.pause()
        after, keys_after = detached_widgets()
        assert after <= before, "removed widgets are still referenced"
        assert keys_after <= keys_before, "removed footer keys are still referenced"
        await app.refresh_once()  # the next tick lets go of their rendered lines
        await pilot.pause()
        assert styles_caches_without_a_widget() <= 0, "dead widgets' rendered lines are still referenced"


async def test_an_app_that_has_exited_leaves_no_rendered_lines_behind() -> None:
    """A test run, or `sparktop` used as a library, ends apps: what Textual's cache keeps of them must go
    with them (in the suite, a worker held ~100,000 dead caches after 16 What-if tests: slow gc for all)."""
    app = make_app(warmup=3)
    async with app.run_test(size=(80, 24)) as pilot:  # the smallest dashboard: its size is not the point
        await pilot.pause()  # the first frame's widgets have their lines cached: enough to be left behind
    assert styles_caches_without_a_widget() <= 0, "an exited app's rendered lines are still referenced"


async def test_cluster_view_lets_go_of_closed_node_screens() -> None:
    """The cluster view runs for hours too: each node detail opened and closed leaves its lines behind
    until the next fetch lets go of them."""
    from sparktop.cluster.node import NodeView
    from sparktop.ui.cluster import ClusterApp, NodeDetailScreen

    class TwoNodes:
        description = "two fixed nodes"

        def fetch(self) -> list[NodeView]:
            return [NodeView(name=f"node-{i}", status="down", reason="test") for i in (1, 2)]

    app = ClusterApp(TwoNodes(), auto_refresh=False)  # type: ignore[arg-type]
    async with app.run_test(size=(120, 36)) as pilot:
        await app.refresh_once()
        await pilot.pause()
        await pilot.press("enter")  # one node screen opened and closed: its lines stay until let go of
        await pilot.pause()
        assert isinstance(app.screen, NodeDetailScreen)
        await pilot.press("escape")
        await pilot.pause()
        await app.refresh_once()  # the next fetch lets go of the closed screens' lines
        await pilot.pause()
        assert styles_caches_without_a_widget() <= 0, "closed node screens' lines are still referenced"
