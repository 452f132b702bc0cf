"""The dashboard's views drawn from a Session without an app: each widget fed by its own `show(...)` with what
DashboardScreen.redraw hands it (sparktop/ui/screens/dashboard.py), for tests that check what a frame shows
(tests/fixtures/demo_session.py gives the session a make_app dashboard holds). The wiring itself, a view fed
the wrong data, is what the SVG snapshots (tests/ui/test_snapshots.py) and the Pilot tests still check.
"""

from __future__ import annotations

from rich.text import Text

from sparktop.analysis.headroom import engine_headroom
from sparktop.analysis.served import ModelPart, model_rows, served_split, split_models
from sparktop.analysis.slowdown import slowdown_lines
from sparktop.analysis.trend import collecting_s
from sparktop.core.columns import ColumnSpec
from sparktop.core.snapshot import ContainerInfo, ProcessInfo
from sparktop.session.rows import Row, cell_text, container_rows, process_rows
from sparktop.session.session import Session
from sparktop.ui.themes import Palette
from sparktop.ui.widgets.budget_bar import BudgetBar
from sparktop.ui.widgets.creep_alerts import creep_text
from sparktop.ui.widgets.gpu_panel import GpuPanel
from sparktop.ui.widgets.models_panel import ModelsPanel
from sparktop.ui.widgets.pressure_panel import PressurePanel
from tests.fixtures.demo_session import default_palette


def budget_bar(session: Session, units: str = "GiB", palette: Palette | None = None) -> BudgetBar:
    """The budget bar as the dashboard draws it: a model server's slice split per model, on the session's
    lines. Its text: `str(bar.render())` (80 columns: it is not laid out)."""
    snapshot = session.latest
    assert snapshot is not None and snapshot.accounting is not None
    lines = session.lines
    bar = BudgetBar()
    bar.show(split_models(snapshot) or snapshot.accounting, snapshot.memory.total, lines.safe_bytes,
             lines.max_bytes, units, palette or default_palette())  # fmt: skip
    return bar


def pressure_panel(session: Session, units: str = "GiB", compact: bool = False) -> PressurePanel:
    """The pressure panel as the dashboard draws it (`compact`: a terminal under 32 lines)."""
    snapshot, assessment = session.latest, session.assessment
    assert snapshot is not None and assessment is not None
    panel = PressurePanel()
    panel.compact = compact
    engine = engine_headroom(snapshot.memory) if snapshot.gpu.unified_memory else None
    panel.show(snapshot.memory, session.pool_series, assessment.level, assessment.reasons, units,
               default_palette(), engine=engine)  # fmt: skip
    return panel


def creep_block(session: Session, units: str = "GiB") -> Text | None:
    """What the creep block under the bar says (None: it is hidden)."""
    return creep_text(session.creep, units, collecting_s(session.history, session.creep_window_s))


def table_rows(
    session: Session,
) -> tuple[list[Row[ContainerInfo | ModelPart]], list[Row[ProcessInfo | ModelPart]]]:
    """The Containers and Processes tables' rows as the dashboard makes them (a model server's row split per
    model as the bar splits it, each consumer's trend from the session), before the table draws them. A
    cell's text: `table_cell(spec, row, key)`."""
    snapshot = session.latest
    assert snapshot is not None and snapshot.accounting is not None
    served = served_split(snapshot, split_models(snapshot) or snapshot.accounting)
    return (
        container_rows(snapshot, session.rate_per_min, served),
        process_rows(snapshot, session.process_rate_per_min, served),
    )


def table_cell(spec: ColumnSpec, row: Row, units: str = "GiB") -> str:
    """The text a table draws in `spec`'s cell of `row` (the warning colour of a fast trend is no text)."""
    value = row.values.get(spec.key)
    return cell_text(spec, value, units, row.styles.get(spec.key, ""), warn_rate=0, warn_color="").text


def models_panel(session: Session, units: str = "GiB") -> ModelsPanel:
    """The Models tab's panel as the dashboard draws it: each served model, what each server reported and
    the slowdowns measured now. Its text: `str(panel.render())` (80 columns: it is not laid out)."""
    snapshot = session.latest
    assert snapshot is not None
    panel = ModelsPanel()
    panel.show(*model_rows(snapshot), units, default_palette().warn, slowdowns=slowdown_lines(snapshot),
               asking="servers" in snapshot.pending)  # fmt: skip
    return panel


def gpu_panel(session: Session, units: str = "GiB") -> GpuPanel:
    """The GPU panel as the dashboard draws it. Its text at a width: `panel.text_at(width)`."""
    snapshot = session.latest
    assert snapshot is not None
    panel = GpuPanel()
    panel.show(snapshot.gpu, session.gpu_series, units, default_palette().spark, now=snapshot.timestamp)
    return panel
