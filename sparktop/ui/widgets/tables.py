"""The containers and processes tables: sortable by any column (click a header, or o / O), filtered by a
substring, updated in place so the selected row and the scroll position survive every refresh.

Each table is a `ConsumerTable` over `Row`s of raw values (sparktop/session/rows.py: what each row holds, its
cells' text, the sort order, a model server's rows); this module only draws them. Adding a column is one
`ColumnSpec` (sparktop/core/columns.py) and its value in the row builder.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from itertools import pairwise
from typing import Any, ClassVar, Generic, TypeVar

from rich.cells import cell_len
from rich.text import Text
from textual.binding import Binding, BindingType
from textual.widgets import DataTable

from sparktop.core.columns import SM_COLUMN, ColumnSpec
from sparktop.core.snapshot import DockerStatus
from sparktop.session.rows import Row, cell_sort_key, cell_text, grouped_sort_key
from sparktop.ui.widgets.datatable_cache import ContentCachedDataTable

T = TypeVar("T")

# In a narrow terminal a text column gives up width down to this (or its label's width), with "…", and
# columns that still do not fit go whole, rightmost first: a column cut in half ("tot", "36") reads as data.
MIN_TEXT_WIDTH = 8
# A long text column at the end (the command line) is worth showing from this width on.
MIN_LAST_WIDTH = 12
# The widest cell of each kind, to decide which columns fit before their cells exist: `123.4 GiB`,
# `+123.4 GiB`, `100`, a PID.
KIND_WIDTH = {"bytes": 9, "rate": 10, "percent": 3, "number": 7}


class Cell(Text):
    """A table cell that remembers the raw value it shows, for sorting (and, in a server's group of rows,
    the server row's key: see `rows.grouped_sort_key`)."""

    group: str | None = None
    child: bool = False

    def __init__(self, text: str, sort_value: Any, style: str = "", justify: Any = None) -> None:
        # Cut with "…" where a narrow terminal narrows its column, never wrapped onto a line not shown.
        super().__init__(text, style=style, justify=justify, no_wrap=True, overflow="ellipsis")
        self.sort_value = sort_value


_GROUP = "\0group"  # in ConsumerTable._shown: the group a row was drawn with (its cells carry it)


def empty_note(
    table: ConsumerTable[Any], things: str, docker: DockerStatus | None = None, asking: bool = False
) -> str:
    """Why a table shows no row, in one line ("" while it shows some): an empty table read as "still
    loading" or "broken". `things` names the rows (`containers`); `docker` says why none may be seen;
    `asking`: Docker has not answered yet (the first sample), so "none" cannot be said yet."""
    if table.row_count:
        return ""
    if table.filter_text:
        return f"no {things} match the filter {table.filter_text!r} (Esc clears it)"
    if asking:
        return f"… (asking the Docker engine for {things})"
    if table.minor_hidden:
        return f"no {things} holding memory; {table.minor_hidden} empty hidden (a: all)"
    if docker is not None and not docker.available and docker.reason:
        return f"no {things} seen: {docker.reason}"
    return f"no {things} running"


class ConsumerTable(ContentCachedDataTable, Generic[T]):
    """A DataTable of `Row`s with a column set, a sort column, a filter and in-place updates. Drawn through
    `datatable_cache` (the one module that uses DataTable's private API); only public API here."""

    DEFAULT_CSS = """
    ConsumerTable { height: 1fr; }
    """

    # DataTable's Home/End scroll sideways, which a row cursor never needs: first / last row instead (as
    # less and vim do with g / G). ctrl+home / ctrl+end keep their meaning.
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("home,g", "scroll_top", "First row", show=False),
        Binding("end,G", "scroll_bottom", "Last row", show=False),
    ]

    def __init__(
        self,
        specs: dict[str, ColumnSpec],
        columns: Iterable[str],
        sort_column: str,
        *,
        hidden: Iterable[str] = (SM_COLUMN,),
        id: str | None = None,
        classes: str | None = None,
    ) -> None:
        super().__init__(id=id, classes=classes, cursor_type="row", zebra_stripes=True, header_height=2)
        self.specs = specs
        self.configured_keys = [c for c in columns if c in specs]  # as the config lists them
        self.hidden = set(hidden)  # columns this machine cannot fill (see `set_hidden`)
        self.narrow_hidden: set[str] = set()  # columns the terminal has no room for (see `_columns_for`)
        self.column_keys = [c for c in self.configured_keys if c not in self.hidden] or self.configured_keys
        self.sort_column = sort_column if sort_column in self.column_keys else self._first_numeric()
        self.sort_reverse = specs[self.sort_column].numeric
        self.filter_text = ""
        self.show_minor = False  # rows that hold no memory (kernel threads, empty containers)
        self.minor_hidden = 0  # how many such rows the last draw left out
        self.units = "GiB"
        self.warn_rate = 100 * 1024**2  # bytes/min at which the trend turns the warning colour
        self.warn_color = "yellow"
        self._rows: dict[str, Row[T]] = {}  # every row, shown or filtered out
        self._rows_pending: Callable[[], list[Row[T]]] | None = None  # makes newer rows than _rows
        self._shown: dict[str, dict[str, Any]] = {}  # row key -> raw values currently drawn
        self._dirty = False  # rows changed since the last draw
        self._force = False  # redraw every cell (the units changed)
        self._grouped = False  # a server's row with its model rows under it is shown

    def _first_numeric(self) -> str:
        return next((k for k in self.column_keys if self.specs[k].numeric), self.column_keys[0])

    def on_mount(self) -> None:
        for key in self.column_keys:
            self.add_column(self._header(key), key=key)

    # -- public ------------------------------------------------------------------------------------------

    @property
    def selected_key(self) -> str | None:
        if not self.row_count:
            return None
        try:
            return self.coordinate_to_cell_key(self.cursor_coordinate).row_key.value
        except Exception:
            return None

    def selected_item(self) -> T | None:
        key = self.selected_key
        row = self._all_rows().get(key) if key else None
        return row.item if row else None

    def item(self, key: str) -> T | None:
        row = self._all_rows().get(key)
        return row.item if row else None

    def set_rows(
        self, rows: list[Row[T]] | Callable[[], list[Row[T]]], units: str, visible: bool = True
    ) -> None:
        """Bring the table to `rows`: add new ones, update changed cells, remove gone ones, re-sort, and put
        the cursor back on the row it was on. With `visible` False (a hidden tab) the drawing waits for
        `flush()`; `rows` may then be a function that makes them, called only when they are needed (a
        flush, a lookup), so a table on a hidden tab costs nothing per tick."""
        self._force |= units != self.units
        self.units = units
        if callable(rows):
            self._rows_pending = rows
        else:
            self._rows_pending = None
            self._rows = {r.key: r for r in rows}
        self._dirty = True
        if visible:
            self.flush()

    def _all_rows(self) -> dict[str, Row[T]]:
        if self._rows_pending is not None:
            make, self._rows_pending = self._rows_pending, None
            self._rows = {r.key: r for r in make()}
        return self._rows

    def flush(self) -> None:
        """Draw what `set_rows` kept (call when the table's tab is shown)."""
        if self._dirty:
            self._sync(force=self._force)

    def set_hidden(self, hidden: set[str]) -> None:
        """Leave out the configured columns in `hidden` (the machine cannot fill them); rarely changes, so
        a change rebuilds the columns."""
        if hidden == self.hidden:
            return
        self.hidden = set(hidden)
        self._use_columns()

    def _use_columns(self) -> None:
        """Show the configured columns that are neither hidden nor without room; a change rebuilds them."""
        shown = [c for c in self.configured_keys if c not in self.hidden]
        keys = [c for c in shown if c not in self.narrow_hidden] or shown or self.configured_keys
        if keys == self.column_keys:
            return
        self.column_keys = keys
        if self.sort_column not in self.column_keys:
            self.sort_column = self._first_numeric()
            self.sort_reverse = self.specs[self.sort_column].numeric
        if not self.columns:
            return  # not mounted yet: on_mount adds the columns
        self.clear(columns=True)
        self._shown = {}
        for key in self.column_keys:
            self.add_column(self._header(key), key=key)
        self._sync(force=True)

    def _room(self) -> int:
        """The cells the columns may take: the table's width less its vertical scrollbar (reserved, so the
        columns do not change as rows come and go)."""
        return self.size.width - self.styles.scrollbar_size_vertical

    def _label_width(self, key: str) -> int:
        return max(cell_len(line) for line in self._header(key).split("\n"))

    def _columns_for(self, room: int) -> set[str]:
        """The columns to leave out at `room` cells: those that are not essential (nor the sort column),
        rightmost first, until the rest fit with their text narrowed as far as it goes."""
        keys = [c for c in self.configured_keys if c not in self.hidden]
        if room <= 0 or not keys:
            return set()
        pad = 2 * self.cell_padding

        def least(key: str) -> int:
            spec = self.specs[key]
            if spec.numeric:
                return max(self._label_width(key), KIND_WIDTH.get(spec.kind, 0)) + pad
            floor = MIN_LAST_WIDTH if key == keys[-1] and spec.max_width else MIN_TEXT_WIDTH
            return max(self._label_width(key), floor) + pad

        need = {key: least(key) for key in keys}
        dropped: set[str] = set()
        for key in reversed(keys):
            if sum(need[k] for k in keys if k not in dropped) <= room:
                break
            if not self.specs[key].essential and key != self.sort_column:
                dropped.add(key)
        return dropped

    def set_show_minor(self, show: bool) -> None:
        self.show_minor = show
        self._sync()

    def set_filter(self, text: str) -> None:
        self.filter_text = text.strip().lower()
        self._sync()

    def sort_by(self, column: str, reverse: bool | None = None) -> None:
        if column not in self.column_keys:
            return
        if reverse is None:
            reverse = (not self.sort_reverse) if column == self.sort_column else self.specs[column].numeric
        old = self.sort_column
        self.sort_column, self.sort_reverse = column, reverse
        at_top = self.cursor_row == 0
        for key in {old, column}:
            self.columns[key].label = Text(self._header(key))  # type: ignore[index]
        self.mark_dimensions_changed()
        self._sync()
        if not self.row_count:
            return
        # A cursor left on the first row (where it starts) stays on the first row: following its row down
        # the new order took the view, and the top rows, with it. A row the user chose stays chosen, in view.
        row = 0 if at_top else self.cursor_row
        self.move_cursor(row=row, animate=False, scroll=True)

    def next_sort_column(self) -> None:
        i = self.column_keys.index(self.sort_column)
        self.sort_by(self.column_keys[(i + 1) % len(self.column_keys)])

    def reverse_sort(self) -> None:
        self.sort_by(self.sort_column, not self.sort_reverse)

    # -- internals ---------------------------------------------------------------------------------------

    def _header(self, key: str) -> str:
        spec = self.specs[key]
        label = spec.label + (f" {'▼' if self.sort_reverse else '▲'}" if key == self.sort_column else "  ")
        # Each size names its unit in its cell (as btop writes them); a percent or a rate column names its
        # unit once, on the header's second line, so narrow columns leave the command line its room.
        return label + {"percent": "\n%", "rate": "\n/min"}.get(spec.kind, "\n" if spec.numeric else "")

    def _visible(self, row: Row[T]) -> bool:
        return not self.filter_text or self.filter_text in row.search

    def _cell(self, key: str, value: Any, row: Row[T]) -> Cell:
        cell = self._plain_cell(key, value, row)
        if row.parent is not None or row.head:
            cell.group, cell.child = row.group, row.parent is not None
        return cell

    def _plain_cell(self, key: str, value: Any, row: Row[T]) -> Cell:
        shown = cell_text(
            self.specs[key],
            value,
            self.units,
            row.styles.get(key, ""),
            warn_rate=self.warn_rate,
            warn_color=self.warn_color,
        )
        return Cell(shown.text, value, shown.style, justify="right" if shown.right else None)

    def _sync(self, force: bool = False) -> None:
        if not self.columns:
            return  # not mounted yet; on_mount adds columns, the next tick fills it
        selected = self.selected_key
        cursor_row = self.cursor_row
        matching = [r for r in self._all_rows().values() if self._visible(r)]
        wanted = {r.key: r for r in matching if self.show_minor or not r.minor}
        self.minor_hidden = len(matching) - len(wanted)
        # A model's row is shown only under its server's row.
        wanted = {k: r for k, r in wanted.items() if r.parent is None or r.parent in wanted}
        self._grouped = any(r.head for r in wanted.values())
        for key in [k for k in self._shown if k not in wanted]:
            self.remove_row(key)
            del self._shown[key]
        for key, row in wanted.items():
            shown = self._shown.get(key)
            if shown is None:
                self.add_row(*(self._cell(c, row.values.get(c), row) for c in self.column_keys), key=key)
            else:
                # A row that gained or lost its model rows: every cell carries the group it sorts with.
                regroup = shown.get(_GROUP) != row.group
                for c in self.column_keys:
                    value = row.values.get(c)
                    redo = force or regroup
                    if redo or shown.get(c) != value:
                        cell = self._cell(c, value, row)
                        old = self.get_cell(key, c)
                        # Bytes jitter every tick; redraw only what the text shows (and all on `force`).
                        if redo or old.plain != cell.plain or old.style != cell.style:
                            self.update_cell(key, c, cell)
            self._shown[key] = dict(row.values)
            if row.group is not None:
                self._shown[key][_GROUP] = row.group
        self._fit_columns()
        self._sort_if_needed()
        self._fit_last_column()
        self._dirty = self._force = False
        if selected is not None and selected in self._shown:
            index = self.get_row_index(selected)
            if index != self.cursor_row:
                self.move_cursor(row=index, animate=False, scroll=False)
        elif self.row_count:
            self.move_cursor(row=min(cursor_row, self.row_count - 1), animate=False, scroll=False)

    def _sort_if_needed(self) -> None:
        """Sort, unless the rows are already in order (DataTable.sort re-renders every cell)."""
        key = self._sort_key_for(self.sort_column)
        if self.sort_column in self.columns:
            keys = [key(cell) for cell in self.get_column(self.sort_column)]  # in row order
            pairs = pairwise(keys)
            if all((b <= a) if self.sort_reverse else (a <= b) for a, b in pairs):
                return
        self.sort(self.sort_column, key=key, reverse=self.sort_reverse)

    def _sort_key_for(self, column: str) -> Callable[[Any], tuple]:
        """A row sorts by its cell; a server's group of rows sorts as one (`rows.grouped_sort_key`)."""
        if not self._grouped:
            return cell_sort_key
        return grouped_sort_key(self.get_column(column) if column in self.columns else (), self.sort_reverse)

    def _fit_columns(self) -> None:
        """Each column as wide as its widest cell or label, growing and shrinking (DataTable's own
        `update_width` re-measures the whole column on every shrinking cell: quadratic per tick); in a
        terminal too narrow for them all, the text columns give up width, widest first."""
        natural: dict[str, int] = {}
        for key, column in self.columns.items():
            cells = self.get_column(key)
            label = max(cell_len(line) for line in column.label.plain.split("\n"))
            natural[str(key.value)] = max([label, *(cell.cell_len for cell in cells)])  # type: ignore[union-attr]
        caps = self._narrowed(natural)
        changed = False
        flexible = self._flexible_last()
        for key, column in self.columns.items():
            name = str(key.value)
            if name == flexible and not column.auto_width:
                continue  # _fit_last_column gives it the room left
            if name in caps:
                if column.auto_width or column.width != caps[name]:
                    column.auto_width, column.width = False, caps[name]
                    changed = True
            elif not column.auto_width or natural[name] != column.content_width:
                column.auto_width, column.content_width = True, natural[name]
                changed = True
        if changed:
            self.mark_dimensions_changed()
            self.refresh()

    def _flexible_last(self) -> str | None:
        """The long text column at the end that takes the width left (the command line), if there is one."""
        if self.column_keys and self.specs[self.column_keys[-1]].max_width is not None:
            return self.column_keys[-1]
        return None

    def _narrowed(self, natural: dict[str, int]) -> dict[str, int]:
        """The widths the text columns are cut to so that the columns fit the table ({} when they fit)."""
        room = self._room()
        if room <= 0:
            return {}
        flexible = self._flexible_last()
        pad = 2 * self.cell_padding
        taken = sum(w + pad for k, w in natural.items() if k != flexible)
        excess = taken + (MIN_LAST_WIDTH + pad if flexible in natural else 0) - room
        widths = {k: w for k, w in natural.items() if k != flexible and not self.specs[k].numeric}
        floors = {k: min(w, max(MIN_TEXT_WIDTH, self._label_width(k))) for k, w in widths.items()}
        while excess > 0:
            widest = max((k for k in widths if widths[k] > floors[k]), key=widths.__getitem__, default=None)
            if widest is None:
                break
            widths[widest] -= 1
            excess -= 1
        return {k: w for k, w in widths.items() if w < natural[k]}

    def on_resize(self) -> None:
        narrow_hidden = self._columns_for(self._room())
        if narrow_hidden != self.narrow_hidden:
            self.narrow_hidden = narrow_hidden
            self._use_columns()
        self._fit_columns()
        self._fit_last_column()

    def _fit_last_column(self) -> None:
        """A long text column at the end (the command line) takes the width that is left instead of
        widening the table past the screen."""
        if not self.column_keys or self.specs[self.column_keys[-1]].max_width is None or not self.size.width:
            return
        last = self.columns.get(self.column_keys[-1])  # type: ignore[call-overload]
        if last is None:
            return
        others = sum(c.get_render_width(self) for k, c in self.columns.items() if k != last.key)
        room = self.size.width - others - 2 * self.cell_padding - 1
        if room >= 12:
            if last.auto_width or last.width != room:
                last.auto_width, last.width = False, room
                self.mark_dimensions_changed()
                self.refresh()
        elif not last.auto_width:
            last.auto_width = True
            self.mark_dimensions_changed()
            self.refresh()

    def on_data_table_header_selected(self, event: DataTable.HeaderSelected) -> None:
        event.stop()
        self.sort_by(str(event.column_key.value))
