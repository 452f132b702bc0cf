"""The one place sparktop touches Textual's private DataTable API: a render cache keyed by content.

Why: DataTable caches rendered cells and lines under its update counter, which every `update_cell` bumps, so
one changed cell re-renders every cell and line of the table. The containers and processes tables change a
few cells per tick, and the dashboard's CPU budget (≤ 1.5 % of a core) cannot pay a full re-render each time.
Measured with `bench/bench_table_cache.py` (30 process rows of the demo, 120×36; per tick `set_rows` of the
next snapshot, then every line rendered; CPU time, median of 300 ticks; Textual 8.2.8, a loaded 2-core VM,
two runs): 7.4-7.8 ms a tick with this cache, 29.5-30.6 ms with DataTable's own, about 4× less.

How: `ContentCachedDataTable` overrides `_render_cell` and `_render_line` with caches keyed by what is shown
(the cell objects themselves, their places, styles and widths) and calls DataTable's originals on a miss;
`_clear_caches` and `notify_style_update` clear them with DataTable's. The cache keys read DataTable's
private state (listed in PRIVATE_API). `mark_dimensions_changed` sets the private flag that makes DataTable
re-measure its virtual size after column widths or labels were changed in place; it has no public setter.

Subclasses use only DataTable's public API plus what is defined here. `tests/ui/test_textual_private_api.py`
fails, naming the method or attribute, when the installed Textual no longer has one of PRIVATE_API with the
signature it had; the runtime dependency in pyproject.toml is pinned to the Textual versions the tests cover.
"""

from __future__ import annotations

from typing import Any

from rich.style import Style
from textual.cache import LRUCache
from textual.widgets import DataTable
from textual.widgets.data_table import RowKey

# What this module relies on in DataTable: the private methods it overrides or calls, with their parameters
# (names and defaults, as `inspect.signature` shows them without annotations), and the private attributes it
# reads or sets (instance attributes made in DataTable.__init__). tests/ui/test_textual_private_api.py checks
# each against the installed Textual, and that nothing else in sparktop/ui uses Textual's private names.
PRIVATE_METHODS: dict[str, str] = {
    "_render_cell": "(self, row_index, column_index, base_style, width, cursor=False, hover=False)",
    "_render_line": "(self, y, x1, x2, base_style)",
    "_clear_caches": "(self)",
    "_get_offsets": "(self, y)",
}
PRIVATE_ATTRIBUTES: tuple[str, ...] = (
    "_row_locations",  # TwoWayDict: row key <-> index (get, get_key)
    "_column_locations",  # TwoWayDict: column key <-> index
    "_data",  # row key -> column key -> cell
    "_header_row_key",  # the RowKey _get_offsets returns for header lines
    "_show_hover_cursor",  # part of DataTable's own cache keys
    "_pseudo_class_state",  # idem (:focus and the like)
    "_require_update_dimensions",  # re-measure on idle
)
PRIVATE_API = (*PRIVATE_METHODS, *PRIVATE_ATTRIBUTES)


class ContentCachedDataTable(DataTable):
    """A DataTable whose cells and lines draw again only when what they show changes. Cells must be
    replaced (`update_cell`), never mutated in place: a cell is known by its identity."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # Before super(), whose reactive watchers clear them.
        self._cells_drawn: LRUCache[tuple, tuple[object, Any]] = LRUCache(4096)
        self._lines_drawn: LRUCache[tuple, tuple[tuple, Any]] = LRUCache(1024)
        super().__init__(*args, **kwargs)

    def mark_dimensions_changed(self) -> None:
        """Column widths or labels changed in place (`Column.content_width`, `.width`, `.label`): have
        DataTable re-measure its size on idle, as its own add_column / update_cell(update_width=True) do."""
        self._require_update_dimensions = True

    def _render_cell(
        self,
        row_index: int,
        column_index: int,
        base_style: Style,
        width: int,
        cursor: bool = False,
        hover: bool = False,
    ) -> Any:
        """Keyed by what the cell shows: the cell object, its place (the row and column ride in the
        segments' meta), its style and width."""
        column_key = self._column_locations.get_key(column_index)
        if row_index == -1:
            row_key: RowKey | None = self._header_row_key
            shown: object = self.columns[column_key].label if column_key is not None else None
        else:
            row_key = self._row_locations.get_key(row_index)
            if column_index == -1:
                row = self.rows.get(row_key) if row_key is not None else None
                shown = row.label if row is not None else None
            else:
                shown = (
                    self._data.get(row_key, {}).get(column_key)
                    if row_key is not None and column_key is not None
                    else None
                )
        row_meta = self.rows.get(row_key) if row_index != -1 and row_key is not None else None
        key = (
            row_index, column_index, row_key, column_key, id(shown), base_style, width, cursor, hover,
            self._show_hover_cursor, self._pseudo_class_state, self.show_cursor, self.fixed_rows,
            self.fixed_columns, self.cell_padding, self.header_height, row_meta.height if row_meta else None,
        )  # fmt: skip
        hit = self._cells_drawn.get(key)
        if hit is not None and hit[0] is shown:
            return hit[1]
        lines = super()._render_cell(row_index, column_index, base_style, width, cursor, hover)
        self._cells_drawn[key] = (shown, lines)  # holds `shown`, so its id is not reused while cached
        return lines

    def _render_line(self, y: int, x1: int, x2: int, base_style: Style) -> Any:
        """As `_render_cell`, for whole lines: keyed by the row's place, its cells and the column widths, so
        only changed rows draw again."""
        try:
            row_key, line_in_row = self._get_offsets(y)
        except LookupError:
            return super()._render_line(y, x1, x2, base_style)
        columns = self.ordered_columns
        if row_key is self._header_row_key:
            row_index: int | None = -1
            shown: tuple = tuple(column.label for column in columns)
        else:
            row_index = self._row_locations.get(row_key)
            data = self._data.get(row_key, {})
            row = self.rows.get(row_key)
            shown = (row.label if row else None, *(data.get(column.key) for column in columns))
        key = (
            y, x1, x2, self.size.width, row_key, row_index, line_in_row, tuple(map(id, shown)),
            tuple(column.get_render_width(self) for column in columns), self.cursor_coordinate,
            self.hover_coordinate, base_style, self.cursor_type, self.show_cursor, self._show_hover_cursor,
            self._pseudo_class_state, self.fixed_rows, self.fixed_columns, self.zebra_stripes,
        )  # fmt: skip
        hit = self._lines_drawn.get(key)
        if hit is not None and all(a is b for a, b in zip(hit[0], shown, strict=True)):
            return hit[1]
        strip = super()._render_line(y, x1, x2, base_style)
        self._lines_drawn[key] = (shown, strip)
        return strip

    def _clear_caches(self) -> None:
        super()._clear_caches()
        self._cells_drawn.clear()
        self._lines_drawn.clear()

    def notify_style_update(self) -> None:
        self._cells_drawn.clear()
        self._lines_drawn.clear()
        super().notify_style_update()
