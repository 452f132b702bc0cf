"""Confirmation dialogs for stopping containers and signalling processes.

Cancel has the focus when a dialog opens, so a stray Enter never stops anything: Enter presses the focused
button, `y` confirms from anywhere in the dialog, `n` / Esc cancel. Only `y` confirms: the key that opened the
dialog (`k`, `K`, `s`) pressed again, or repeated by a held key, must not get past the Cancel default.
The dialog returns True (confirmed) or False through `dismiss`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Button, Static

from sparktop.core.format import fmt_bytes
from sparktop.stopping.stop_book import Target


class ConfirmScreen(ModalScreen[bool]):
    """A yes/no dialog: `title` (plain text), body lines (Content, or plain strings), a red confirm button and
    a focused Cancel. Names in the body come from other users: they are Content variables, never markup."""

    AUTO_FOCUS = "#cancel"
    DEFAULT_CSS = """
    ConfirmScreen { align: center middle; background: $background 60%; }
    ConfirmScreen > #dialog {
        width: auto; min-width: 44; max-width: 96%; height: auto; max-height: 96%;
        border: thick $error; background: $surface; padding: 0 2;
    }
    ConfirmScreen #title { text-style: bold; width: auto; margin-bottom: 1; }
    ConfirmScreen #body { width: auto; max-width: 72; height: auto; max-height: 20; overflow-y: auto; }
    ConfirmScreen #hint { color: $text-muted; width: auto; margin-top: 1; }
    ConfirmScreen #buttons { height: auto; width: auto; margin-top: 1; }
    ConfirmScreen Button { margin-right: 2; min-width: 12; }
    /* Toasts wait while a confirmation is open: on a small terminal the dialog takes the whole screen and
       they covered its text and buttons. They show on the screen below once it closes. */
    ConfirmScreen Toast { display: none; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "confirm", "Confirm", show=False),
        Binding("n,escape", "cancel", "Cancel", show=False),
        Binding("left,right", "switch", "Switch button", show=False),
    ]

    def __init__(
        self,
        title: str,
        lines: Iterable[str | Content],
        confirm_label: str = "Stop",
    ) -> None:
        super().__init__()
        self.title_text = title
        self.lines = list(lines)
        self.confirm_label = confirm_label

    def compose(self) -> ComposeResult:
        keys = "y"
        with Vertical(id="dialog"):
            yield Static(self.title_text, id="title", markup=False)
            body = Content("\n").join(Content(x) if isinstance(x, str) else x for x in self.lines)
            yield Static(body, id="body", markup=False)
            with Horizontal(id="buttons"):
                yield Button(f"{self.confirm_label} ({keys})", id="confirm", variant="error")
                yield Button("Cancel (n/Esc)", id="cancel", variant="primary")
            yield Static(
                f"{keys}: {self.confirm_label.lower()} · n/Esc: cancel · ←/→: switch", id="hint", markup=False
            )

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.dismiss(event.button.id == "confirm")

    def action_confirm(self) -> None:
        self.dismiss(True)

    def action_cancel(self) -> None:
        self.dismiss(False)

    def action_switch(self) -> None:
        focused = self.focused
        target = "#confirm" if focused is None or focused.id == "cancel" else "#cancel"
        self.query_one(target, Button).focus()


# --- what each dialog says ----------------------------------------------------------------------------------


def _line(markup: str, **values: object) -> Content:
    """Our markup with the `$name` values inserted as plain text: a `[/b]` in a name is shown, not parsed."""
    return Content.from_markup(markup, **values)


def memory_line(target: Target, units: str) -> Content:
    return _line(
        # The two sides on a line of their own: wrapped, "(CPU side 2.9 GiB, GPU side 37.4" left its unit
        # on the next line at 60 columns.
        "memory: [b]$total[/b]\n  CPU side $cpu, GPU side $gpu",
        total=fmt_bytes(target.total, units),
        cpu=fmt_bytes(target.cpu_bytes, units),
        gpu=fmt_bytes(target.gpu_bytes, units),
    )


def container_lines(target: Target, units: str) -> list[str | Content]:
    compose = "—"
    if target.project or target.service:
        compose = f"{target.project or '?'} / {target.service or '?'}"
    detail = f"  ({target.detail})" if target.detail else ""
    return [
        _line("container: [b]$label[/b]$detail", label=target.label, detail=detail),
        f"image: {target.image or '—'}",
        f"compose project / service: {compose}",
        memory_line(target, units),
    ]


def stop_dialog(target: Target, units: str, timeout: float) -> ConfirmScreen:
    lines = container_lines(target, units)
    lines.append(f"\nSIGTERM, then the engine's SIGKILL after {timeout:g} s.")
    return ConfirmScreen(f"Stop container {target.label}?", lines, "Stop")


def kill_dialog(target: Target, units: str, why: str | None = None) -> ConfirmScreen:
    lines = ([why, ""] if why else []) + container_lines(target, units)
    lines.append("\nSIGKILL now: the container gets no chance to clean up.")
    return ConfirmScreen(f"Kill container {target.label}?", lines, "Kill")


def project_dialog(project: str, targets: Sequence[Target], units: str, timeout: float) -> ConfirmScreen:
    width = max((len(t.label) for t in targets), default=0)
    lines: list[str | Content] = [
        _line("compose project [b]$project[/b]: $n running container(s)", project=project, n=len(targets)),
        "",
    ]
    for t in targets:
        # One short line each (80 columns): name, service, memory; the image is in the `s` dialog.
        rest = (
            f"  {fmt_bytes(t.total, units):>9}  (CPU {fmt_bytes(t.cpu_bytes, units)}, "
            f"GPU {fmt_bytes(t.gpu_bytes, units)})" + (f"  {t.service}" if t.service else "")
        )
        lines.append(_line("  [b]$label[/b]$rest", label=t.label.ljust(width), rest=rest))
    total = sum(t.total for t in targets)
    lines.append(_line("\nmemory in all: [b]$total[/b]", total=fmt_bytes(total, units)))
    lines.append(f"SIGTERM, then the engine's SIGKILL after {timeout:g} s.")
    return ConfirmScreen(f"Stop compose project {project}?", lines, "Stop all")


def signal_dialog(target: Target, pid: int, signame: str, units: str) -> ConfirmScreen:
    lines: list[str | Content] = [
        _line("process: [b]$label[/b]  PID $pid", label=target.label, pid=pid),
        f"command: {target.detail or '—'}",
        memory_line(target, units),
    ]
    if signame == "SIGKILL":
        lines.append("\nSIGKILL: the process gets no chance to clean up.")
    label = "Kill" if signame == "SIGKILL" else "Terminate"
    return ConfirmScreen(f"Send {signame} to {target.label} ({pid})?", lines, label)
