"""The help screen (?): the keys, and how to read the budget bar and the pressure levels."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.widgets import Markdown

from sparktop.ui.screens.modal import ReadingScreen

HELP = """\
# sparktop

A live view of the DGX Spark's **one unified memory pool**, shared by the CPU and the GPU.

Scroll this help with `↑` `↓` `PageUp` `PageDown` `Home` `End`; `Esc`, `q` or `?` closes it.

## Keys everywhere

| key | action |
|---|---|
| `1` `2` `3` `4` `5` | Dashboard, Containers, Processes, What-if, Models tab (`w` opens What-if too) |
| `/` | filter the tables (Enter keeps the filter, `Esc` clears it) |
| `o` / `O` | sort by the next column / reverse the sort (or click a header) |
| `a` | show / hide the rows that hold no memory (kernel threads, empty containers) |
| `p` | pause / resume the display (sampling goes on; a replay holds) |
| `+` (or `=`) / `-` | refresh faster / slower |
| `t` | next theme |
| `M` | messages: every alert raised and cleared, problem, action and warning since start |
| `B` | write the in-memory history (the dashboard's black box) to the state dir (`history-….jsonl`) |
| `ctrl+p` | command palette: every action by name |
| `?` | this help |
| `q` or `ctrl+c` | quit (`ctrl+q` too) |

## Replay (`sparktop --replay FILE`)

| key | action |
|---|---|
| `]` / `[` | play faster / slower: 1×, 2×, 5×, 10×, 30×, 60×, 300×, 600× the recorded pace |
| `→` `←` (or `.` `,`) | 10 s on / back (`←` `→` scroll a table: use `.` `,` there) |
| `>` / `<` | 1 min on / back |
| `}` / `{` | 10 min on / back |
| `Home` / `End` | the start / the end of the recording (on the Dashboard tab) |
| `j` | go to a time: `1:30`, `1:02:03`, or `-5:00` for 5 min before the end |

At speed, every snapshot still goes into the history, the creep watch and the trends; the views show the
last of each tick. A seek back plays the recording again up to that moment (from the nearest checkpoint,
kept in the background), so the history and creep alerts are what they were there. The header says where
the playback is, its length and speed; `--speed N` and `--start TIME` (`--start=-5:00`: 5 min before the
end) set them at start.

## Containers and Processes tabs

| key | action |
|---|---|
| `↑` `↓` `PageUp` `PageDown` | move the selection |
| `Home` `End` (or `g` `G`) | first / last row (a new sort starts at the first row too) |
| `s` | stop the selected container (or the container of the selected process), after a confirmation |
| `S` | stop every running container of the selected row's compose project |
| `k` / `K` | SIGTERM / SIGKILL the selected host process; `K` also kills a container whose stop timed out |

## What-if tab

| key | action |
|---|---|
| `Tab` / `shift+tab` | move between the find box, the catalog and the plan |
| `/` | find a workload in the catalog |
| `Enter` or `Space` | add the highlighted catalog entry to the plan (or drag it onto the plan) |
| `Delete` or `Backspace` | remove the highlighted plan item (or drag it out of the plan) |
| `e` | edit the highlighted plan item's parameters (`ctrl+s` saves, `Esc` cancels) |
| `b` | baseline: live, this clean machine (`plan --clean`) or a clean DGX Spark (`plan --machine spark`) |
| `m` | plan with the peaks measured on this machine where known, or with the estimates alone |
| `s` / `l` | save the plan to / load a plan from a TOML file (`Esc` cancels) |

## Confirmations

| key | action |
|---|---|
| `y` | confirm (Cancel is focused when the dialog opens) |
| `n` or `Esc` | cancel |
| `←` `→` | move between the buttons |

## The budget bar

One segment per consumer: each **container** (its cgroup memory plus the GPU memory NVML reports for its
processes), the largest **host processes**, the **rest of the host**, **GPU memory of unseen processes**,
**unattributed** (what nobody explains: kernel, driver, page cache) and **free**. The pool is MemTotal;
used = MemTotal − MemAvailable, as `free` shows it.

The **safe 80 GB** and **aggressive 100 GB** lines (decimal GB, `--safe` / `--max`) are drawn where they
fall; on a machine much smaller than a Spark, lines you did not set keep their share of the pool (80/128 and
100/128: 16.1 and 20.1 GB of 24 GiB), the same in every view and in `sparktop plan`. The state reads
*under safe*, *over safe* or *OVER AGGRESSIVE*.

On GB10, CUDA allocations appear in neither RSS nor the cgroup, so the GPU side is counted apart.

A host process counts its **PSS** (shared pages split between their users), re-read every few seconds; while
its RSS has moved since that read, the fresh **RSS** is counted instead and the PSS cell is dim.

On a machine with a **discrete GPU** (an H100, an RTX card; the header says *discrete GPU*), GPU memory is
the GPU's own, not the pool's: a second bar under the pool's shows it, each holder in the same colour as in
the pool bar, with *other* (what the driver counts as used that no listed process explains) and *free*.

A model server (Ollama, vLLM, SGLang, llama.cpp) is split into **one segment per loaded model**, next to
the server's own remainder; in the Containers and Processes tables, into one row per model under the
server's row (which shows the remainder). `s` / `k` on a model's row do nothing: stop the server's row.
**CUDA free** (under *available*) is what a CUDA program is told is free: on GB10 the page cache counts as
used there, and vLLM refuses to start when its `gpu_memory_utilization` asks for more;
`sync && echo 3 | sudo tee /proc/sys/vm/drop_caches` frees the cache.

## The GPU

The tables' **sm** column is each process's share of the GPU's SM time (NVML's per-process utilisation; a
container sums its processes). Where the driver answers neither per-process call, the column is hidden and
the GPU panel's *sm %* line says why. **slowed** on the GPU panel: the SM clock is below its maximum for a
reason NVML names (*SW power cap*, *HW thermal slowdown*, ...), and for how long; idle clocking down is not
shown. A slowdown that lasts 30 s under load goes to the messages (`M`) and is marked on the history chart.

## Memory pressure

Levels follow earlyoom, nohang and systemd-oomd: **warning** below 20 % available or PSI *some* avg10
above 10; **critical** below 10 % available or sustained *full* pressure. On a Spark, running out can
freeze the whole machine: act on a warning.

## Creep

A consumer whose memory keeps growing over the last minutes gets an alert with its rate and when the pool
would cross the lines at that rate. One-off steps and noise do not alert.

## Stopping things

Every stop and signal asks first, with **Cancel** focused: `y` confirms, `n` or Esc cancels. Stops run in
the background; the result ("stopped X — freed 3.1 GB") is reported once the pool shows the memory back.
`--read-only` (or `read_only = true` in the config) turns every stop and signal off. Each confirmed action
is logged to `$XDG_STATE_HOME/sparktop/actions.log`.

Press **Esc**, **q** or **?** to close.
"""


class HelpScreen(ReadingScreen):
    BINDINGS: ClassVar[list[BindingType]] = [Binding("question_mark", "close", "Close", show=False)]

    DEFAULT_CSS = """
    HelpScreen > VerticalScroll { width: 90%; max-width: 100; height: 90%; }
    """

    # The scroll area takes the focus, so the arrow keys, PageUp/PageDown and Home/End scroll the help
    # without a mouse (over SSH the lower sections are otherwise out of reach).
    AUTO_FOCUS = "#help-scroll"

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help-scroll"):
            yield Markdown(HELP)
