"""A warning block listing the consumers whose memory creeps; hidden while nothing does."""

from __future__ import annotations

import math

from rich.text import Text
from textual.widgets import Static

from sparktop.analysis.trend import CreepAlert
from sparktop.core.format import fmt_duration
from sparktop.ui.widgets.redraw import off_screen

# An alert is severe (drawn in $error) when the pool is over the aggressive line or will be within this.
SEVERE_ETA_S = 10 * 60


def creep_text(
    alerts: list[CreepAlert], units: str = "GiB", collecting_s: float | None = None
) -> Text | None:
    """What the block says: each alert, or while nothing alerts and the rule still needs `collecting_s` of
    history, one quiet line that says so (so that silence is not read as "nothing creeps"); None: hidden."""
    if alerts:
        # Text, not markup: a process name may hold square brackets.
        text = Text("⚠ creep")
        for alert in alerts:
            text.append("\n" + alert.message(units))
        return text
    if collecting_s is None:
        return None
    # Whole tens of seconds: the line changes (and repaints) every 10 s, not every tick.
    left = fmt_duration(10 * math.ceil(collecting_s / 10))
    return Text(f"creep watch: collecting data (~{left} to go; fast growth alerts at once)")


def is_severe(alerts: list[CreepAlert]) -> bool:
    """Drawn in $error: the pool is over the aggressive line, or will be within SEVERE_ETA_S."""
    return any(a.eta_aggressive_s is not None and a.eta_aggressive_s <= SEVERE_ETA_S for a in alerts)


class CreepAlerts(Static):
    """Call `show_alerts(alerts, units)` after each tick."""

    DEFAULT_CSS = """
    CreepAlerts {
        display: none;
        height: auto;
        padding: 0 1;
        color: $warning;
        text-style: bold;
        background: $warning 15%;
        border-left: thick $warning;
    }
    CreepAlerts.-collecting {
        color: $text-muted;
        text-style: none;
        background: $surface;
        border-left: thick $panel;
    }
    CreepAlerts.-severe {
        color: $error;
        background: $error 15%;
        border-left: thick $error;
    }
    """

    def __init__(self, *, name: str | None = None, id: str | None = None, classes: str | None = None) -> None:
        super().__init__("", name=name, id=id, classes=classes)
        self.alerts: list[CreepAlert] = []
        self._shown: Text | None = None
        self._pending: Text | None = None  # what to show once its tab is shown again (on_show)

    def show_alerts(
        self, alerts: list[CreepAlert], units: str = "GiB", collecting_s: float | None = None
    ) -> None:
        """`collecting_s`: seconds of history the steady-growth rule still needs (None: it has enough); while
        nothing alerts, one quiet line says so, so that silence is not read as "nothing creeps"."""
        self.alerts = list(alerts)
        text = creep_text(alerts, units, collecting_s)
        if text is None:
            self.display = False
            return
        self.set_class(is_severe(alerts), "-severe")
        self.set_class(not alerts, "-collecting")
        if self.display and off_screen(self):
            # Its tab is hidden: no repaint every tick for nobody; on_show draws the latest, laid out anew
            # (the block may have grown or shrunk meanwhile).
            self._pending = text if text != self._shown else None
            return
        self._pending = None
        if text != self._shown or not self.display:
            # The ETAs change every tick; lay the screen out again only when the block's height changes.
            width = self.content_size.width
            before = self._shown
            same_height = (
                self.display
                and before is not None
                and width > 0
                and len(before.wrap(self.app.console, width)) == len(text.wrap(self.app.console, width))
            )
            self._shown = text
            self.update(text, layout=not same_height)
        self.display = True

    def on_show(self) -> None:
        if self._pending is not None:
            self._shown, self._pending = self._pending, None
            self.update(self._shown)
