"""Edit one planned workload's parameters: a form built from `Plan.params(uid)`.

Choices are Selects, booleans Switches, numbers and text Inputs checked by the catalog's own coercion (the
same rules as plan files and the CLI, so "32k" is a valid context). Save (or Enter in a field) applies every
change at once or none: a bad value leaves the plan as it was and shows one line saying what is wrong.
Esc cancels. The screen returns True when it changed the plan.
"""

from __future__ import annotations

from typing import Any, ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.validation import ValidationResult, Validator
from textual.widget import Widget
from textual.widgets import Button, Input, Label, Select, Static, Switch

from sparktop.plan import Param, Plan, PlanError


class ParamValidator(Validator):
    """A field checked by the catalog's coercion; empty means "no override" where that is allowed."""

    def __init__(self, plan: Plan, param: Param) -> None:
        super().__init__()
        self.plan, self.param = plan, param

    def validate(self, value: str) -> ValidationResult:
        if not value.strip():
            if self.param.overridden or self.param.value is None or self.param.default is not None:
                return self.success()
            return self.failure("needs a value")
        try:
            self.plan.catalog.coerce_param(self.param.key, value)
        except ValueError as exc:
            return self.failure(str(exc))
        return self.success()


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def _on_off(value: bool) -> str:
    return "on" if value else "off"


class PlanEditScreen(ModalScreen[bool]):
    DEFAULT_CSS = """
    PlanEditScreen { align: center middle; }
    PlanEditScreen > #dialog {
        width: 84; max-width: 100%; height: auto; max-height: 100%;
        border: thick $primary; background: $surface; padding: 0 1;
    }
    PlanEditScreen #title { text-style: bold; width: 1fr; }
    PlanEditScreen #fields {
        height: auto; max-height: 70vh; margin: 1 0;
        layout: grid; grid-size: 3; grid-columns: 24 1fr 8; grid-rows: auto;
    }
    PlanEditScreen #fields > Label { width: 24; padding: 0 1 0 0; }
    PlanEditScreen #fields > .switch { column-span: 2; height: auto; }
    PlanEditScreen #fields Switch { border: none; height: 1; width: 10; padding: 0 1; }
    PlanEditScreen #fields > Input, PlanEditScreen #fields > Select { width: 1fr; }
    PlanEditScreen #fields .unit { width: 8; padding: 0 0 0 1; color: $text-muted; }
    PlanEditScreen #fields > .no-unit { column-span: 2; margin-right: 8; }
    PlanEditScreen #error { color: $error; height: auto; }
    PlanEditScreen #buttons { height: auto; align-horizontal: right; }
    PlanEditScreen #buttons Button { margin-left: 1; }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Cancel"),
        Binding("ctrl+s", "save", "Save"),
    ]

    def __init__(self, plan: Plan, uid: int) -> None:
        super().__init__()
        self.plan, self.uid = plan, uid
        self.params = {p.key: p for p in plan.params(uid)}
        self.name_shown = plan.resolve(uid).name

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Label(f"Edit {self.name_shown}", id="title", markup=False)
            with VerticalScroll(id="fields"):
                for param in self.params.values():
                    yield from self._row(param)
            yield Static("", id="error", markup=False)
            with Horizontal(id="buttons"):
                yield Button("Save", variant="primary", id="save", compact=True)
                yield Button("Cancel", id="cancel", compact=True)

    def _row(self, p: Param) -> tuple[Widget, ...]:
        """The field's three cells in the grid: its label, its widget and the unit (a switch's on/off)."""
        field_id = f"field-{p.key}"
        widget: Input | Select[str] | Switch
        if p.type == "choice" and p.choices:
            options = [(c, c) for c in p.choices]
            if p.value is not None and p.value not in p.choices:
                options.insert(0, (str(p.value), str(p.value)))
            value = p.value if p.value is not None else Select.NULL
            widget = Select(options, value=value, allow_blank=p.value is None, id=field_id, compact=True)
        elif p.type == "bool":
            widget = Switch(value=bool(p.value), id=field_id)
        else:
            placeholder = "estimated" if p.key == "memory_gb" else _text(p.default) or ""
            widget = Input(
                _text(p.value),
                placeholder=placeholder,
                validators=[ParamValidator(self.plan, p)],
                id=field_id,
                compact=True,
            )
        widget.tooltip = p.help or None
        # A switch shows its state by colour only: the word beside it says it too.
        unit_text = _on_off(bool(p.value)) if isinstance(widget, Switch) else p.unit
        label = Label(p.label + (" *" if p.overridden else ""), markup=False)
        unit = Label(unit_text, classes="unit", id=f"unit-{p.key}", markup=False)
        if isinstance(widget, Switch):  # its word right beside it, as a switch is narrower than its column
            return label, Horizontal(widget, unit, classes="switch")
        return label, widget, unit

    @on(Switch.Changed)
    def _switched(self, event: Switch.Changed) -> None:
        key = (event.switch.id or "").removeprefix("field-")
        if key in self.params:
            self.query_one(f"#unit-{key}", Label).update(_on_off(event.value))

    def on_mount(self) -> None:
        first = self.query("#fields Input, #fields Select, #fields Switch").first()
        first.focus()

    # -- collecting and applying -------------------------------------------------------------------------

    def changes(self) -> dict[str, Any]:
        """Fields whose value differs from the current one; None clears an override. ValueError (one line)
        for a field that does not validate."""
        out: dict[str, Any] = {}
        for key, p in self.params.items():
            widget = self.query_one(f"#field-{key}")
            if isinstance(widget, Switch):
                if widget.value != bool(p.value):
                    out[key] = widget.value
            elif isinstance(widget, Select):
                value = widget.value
                if value is not Select.BLANK and value != p.value:
                    out[key] = value
            elif isinstance(widget, Input):
                text = widget.value.strip()
                result = widget.validate(text)
                if result is not None and not result.is_valid:
                    reason = result.failure_descriptions[0] if result.failure_descriptions else "invalid"
                    raise ValueError(f"{p.label}: {reason}")
                if not text:
                    if p.overridden:
                        out[key] = None
                elif text != _text(p.value):
                    out[key] = text
        return out

    def action_save(self) -> None:
        error = self.query_one("#error", Static)
        try:
            changes = self.changes()
        except ValueError as exc:
            error.update(str(exc))
            return
        item = self.plan.item(self.uid)
        before = dict(item.overrides)
        try:
            for key, value in changes.items():
                self.plan.set(self.uid, key, value)
        except PlanError as exc:
            item.overrides = before  # all or nothing
            label = self.params[exc.field].label if exc.field in self.params else None
            error.update(f"{label}: {exc.message}" if label else str(exc))
            return
        self.dismiss(bool(changes))

    def action_cancel(self) -> None:
        self.dismiss(False)

    @on(Button.Pressed, "#save")
    def _save_pressed(self) -> None:
        self.action_save()

    @on(Button.Pressed, "#cancel")
    def _cancel_pressed(self) -> None:
        self.action_cancel()

    @on(Input.Submitted)
    def _submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.action_save()

    @on(Input.Changed)
    def _changed(self, event: Input.Changed) -> None:
        # Say what is wrong as it is typed; clear the line once it is fixed.
        result = event.validation_result
        p = self.params.get((event.input.id or "").removeprefix("field-"))
        error = self.query_one("#error", Static)
        if result is not None and not result.is_valid and p is not None:
            error.update(f"{p.label}: {result.failure_descriptions[0]}")
        else:
            error.update("")
