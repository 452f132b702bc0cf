"""Save or load a plan file (TOML, the same file `sparktop plan --file` reads).

Load: a bad file gives one line with FILE:LINE from the plan loader and the dialog stays open. Save: an
existing file is never overwritten without a second, explicit confirmation. Returns the Plan loaded, or the
Path saved to, or None when cancelled.
"""

from __future__ import annotations

from pathlib import Path

from textual import on
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.widgets import Button, Input, Label, Static

from sparktop.plan import Plan, PlanError, load_plan, save_plan
from sparktop.ui.screens.modal import DialogScreen


class PlanFileScreen(DialogScreen[Plan | Path]):
    DEFAULT_CSS = """
    PlanFileScreen > #dialog { width: 80; }
    PlanFileScreen #message.-confirm { color: $warning; }
    PlanFileScreen #buttons { height: auto; align-horizontal: right; }
    PlanFileScreen #buttons Button { margin-left: 1; }
    """

    def __init__(self, mode: str, plan: Plan, path: Path) -> None:
        """`mode` "save" writes `plan`; "load" reads a new plan with `plan.catalog`."""
        super().__init__()
        if mode not in ("save", "load"):
            raise ValueError(f"mode must be save or load, not {mode!r}")
        self.mode, self.plan, self.initial = mode, plan, path
        self._confirm_for: Path | None = None  # the existing file the user was warned about

    def compose(self) -> ComposeResult:
        verb = "Save plan to" if self.mode == "save" else "Load plan from"
        with Vertical(id="dialog"):
            yield Label(f"{verb} (TOML file)", id="title", markup=False)
            yield Input(str(self.initial), id="path")
            yield Static("", id="message", markup=False)
            with Horizontal(id="buttons"):
                yield Button("Save" if self.mode == "save" else "Load", variant="primary", id="ok")
                yield Button("Cancel", id="cancel")

    def on_mount(self) -> None:
        self.query_one("#path", Input).focus()

    def _say(self, text: str, confirm: bool = False) -> None:
        message = self.query_one("#message", Static)
        message.update(text)
        message.set_class(confirm, "-confirm")

    def action_ok(self) -> None:
        text = self.query_one("#path", Input).value.strip()
        if not text:
            self._say("give a file name")
            return
        path = Path(text).expanduser()
        if self.mode == "load":
            try:
                plan = load_plan(path, self.plan.catalog)
            except PlanError as exc:
                more = len(exc.problems) - 1  # `sparktop plan --file` lists them all
                self._say(str(exc).splitlines()[0] + (f" (and {more} more)" if more else ""))
                return
            self.dismiss(plan)
            return
        if path.is_dir():
            self._say(f"{path} is a directory")
            return
        if path.exists() and self._confirm_for != path:
            self._confirm_for = path
            self.query_one("#ok", Button).label = "Overwrite"
            self._say(f"{path} exists: press Overwrite (or Enter) again to replace it", confirm=True)
            return
        try:
            save_plan(self.plan, path)
        except (OSError, ValueError, TypeError) as exc:
            reason = getattr(exc, "strerror", None) or str(exc)
            self._say(f"cannot write {path}: {reason}")
            return
        self.dismiss(path)

    @on(Input.Changed, "#path")
    def _path_changed(self) -> None:
        if self._confirm_for is not None:  # a new name needs its own confirmation
            self._confirm_for = None
            self.query_one("#ok", Button).label = "Save"
            self._say("")

    @on(Input.Submitted, "#path")
    def _submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.action_ok()

    @on(Button.Pressed, "#ok")
    def _ok(self) -> None:
        self.action_ok()

    @on(Button.Pressed, "#cancel")
    def _cancel(self) -> None:
        self.action_cancel()
