"""A warning block listing the consumers whose memory creeps; hidden while nothing does."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from sparktop.analysis.trend import CreepAlert

# An alert is severe (drawn in $error) when the pool is over the aggressive line or will be within this.
SEVERE_ETA_S = 10 * 60


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
    CreepAlerts.-severe {
        color: $error;
        background: $error 15%;
        border-left: thick $error;
    }
    """

    def __init__(self, *, name: str | None = None, id: str | None = None, classes: str | None = None) -> None:
        super().__init__("", name=name, id=id, classes=classes)
        self.alerts: list[CreepAlert] = []

    def show_alerts(self, alerts: list[CreepAlert], units: str = "GiB") -> None:
        self.alerts = list(alerts)
        if not alerts:
            self.display = False
            return
        severe = any(a.eta_aggressive_s is not None and a.eta_aggressive_s <= SEVERE_ETA_S for a in alerts)
        self.set_class(severe, "-severe")
        # Text, not markup: a process name may hold square brackets.
        text = Text("⚠ creep")
        for alert in alerts:
            text.append("\n" + alert.message(units))
        self.update(text)
        self.display = True
