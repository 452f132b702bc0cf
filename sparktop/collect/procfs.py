"""Machine-wide readings from procfs: `/proc/meminfo`, PSI files and `/proc/stat`.

On a unified-memory machine (GB10) `/proc/meminfo` is the truth for the whole pool: used = MemTotal −
MemAvailable, as `free` and btop show. The parsers take text so they can be tested (and fuzzed) apart from the
files; the readers add the path to any error message.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

from sparktop.collect.tree_files import read_bytes
from sparktop.core.snapshot import HostMemory, Pressure, PressureLine

__all__ = [
    "CpuSampler",
    "ProcReadError",
    "parse_meminfo",
    "parse_pressure",
    "read_meminfo",
    "read_pressure",
    "read_text",
]

# meminfo key -> HostMemory field
_MEMINFO_FIELDS = {
    "MemTotal": "total",
    "MemFree": "free",
    "MemAvailable": "available",
    "Cached": "cached",
    "Buffers": "buffers",
    "Shmem": "shmem",
    "SReclaimable": "sreclaimable",
    "SwapTotal": "swap_total",
    "SwapFree": "swap_free",
}

_UNITS = {"kB": 1024, "KB": 1024, "kb": 1024, "B": 1, "": 1}


class ProcReadError(Exception):
    """A procfs file that could not be read or made no sense; str(exc) is one line naming the file."""


def read_text(
    path: str | os.PathLike[str], limit: int = 1 << 20, beneath: str | os.PathLike[str] | None = None
) -> str:
    """The file as text, at most `limit` bytes of it, with one `open`/`read`/`close` for the usual small
    procfs/sysfs file: a regular file only, never through a link out of `beneath` (collect/tree_files.py).
    Raises OSError (FileNotFoundError, PermissionError, ProcessLookupError, tree_files.Refused ...)."""
    data = read_bytes(os.fspath(path), limit, None if beneath is None else os.fspath(beneath))
    return data.decode("utf-8", "replace")


def _why(exc: OSError) -> str:
    return exc.strerror or type(exc).__name__


# --- /proc/meminfo ----------------------------------------------------------------------------------------


def parse_meminfo(text: str, source: str = "/proc/meminfo", notes: list[str] | None = None) -> HostMemory:
    """Parse meminfo text. MemTotal and MemFree are required; a line that does not parse is ignored unless
    it is one of those. Without MemAvailable (kernels before 3.14) the value is estimated as
    free + buffers + cached − shmem + SReclaimable (clamped to [free, total]) and a line saying so is
    appended to `notes` when given. Raises ProcReadError (one line naming `source`) for anything else."""
    values: dict[str, int] = {}
    for line in text.splitlines():
        key, sep, rest = line.partition(":")
        field = _MEMINFO_FIELDS.get(key.strip())
        if not sep or field is None or field in values:
            continue
        parts = rest.split()
        if not parts or len(parts) > 2:
            continue
        unit = _UNITS.get(parts[1] if len(parts) == 2 else "")
        if unit is None:
            continue
        try:
            number = int(parts[0])
        except ValueError:
            continue
        if number < 0:
            continue
        values[field] = number * unit
    missing = [k for k, f in _MEMINFO_FIELDS.items() if f in ("total", "free") and f not in values]
    if missing:
        raise ProcReadError(f"{source}: malformed, no {' or '.join(missing)} line")
    if values["total"] <= 0:
        raise ProcReadError(f"{source}: malformed, MemTotal is 0")
    if "available" not in values:
        estimate = (
            values["free"]
            + values.get("buffers", 0)
            + values.get("cached", 0)
            - values.get("shmem", 0)
            + values.get("sreclaimable", 0)
        )
        values["available"] = min(values["total"], max(values["free"], estimate))
        if notes is not None:
            notes.append(f"{source}: no MemAvailable (kernel older than 3.14?): available is estimated")
    return HostMemory.model_validate(values)


def read_meminfo(proc_root: Path = Path("/proc"), notes: list[str] | None = None) -> HostMemory:
    """`/proc/meminfo` as HostMemory (bytes). Raises ProcReadError with a one-line message naming the file."""
    path = os.path.join(proc_root, "meminfo")
    try:
        text = read_text(path, beneath=proc_root)
    except OSError as exc:
        raise ProcReadError(f"cannot read {path}: {_why(exc)}") from exc
    return parse_meminfo(text, path, notes)


# --- PSI ----------------------------------------------------------------------------------------------------


def _parse_pressure_line(parts: list[str]) -> PressureLine | None:
    fields: dict[str, str] = {}
    for token in parts:
        key, sep, value = token.partition("=")
        if sep:
            fields[key] = value
    try:
        avgs = [float(fields[k]) for k in ("avg10", "avg60", "avg300")]
        total = int(fields["total"])
    except (KeyError, ValueError):
        return None
    if total < 0 or any(not math.isfinite(a) or a < 0 for a in avgs):
        return None
    return PressureLine(avg10=avgs[0], avg60=avgs[1], avg300=avgs[2], total_us=total)


def parse_pressure(text: str) -> Pressure | None:
    """Parse PSI text (`some avg10=… avg60=… avg300=… total=…`, the same for `full`). Malformed lines are
    ignored; None when no line parses. Never raises."""
    some = full = None
    for line in text.splitlines():
        parts = line.split()
        if not parts:
            continue
        if parts[0] == "some" and some is None:
            some = _parse_pressure_line(parts[1:])
        elif parts[0] == "full" and full is None:
            full = _parse_pressure_line(parts[1:])
    if some is None and full is None:
        return None
    return Pressure(some=some, full=full)


def read_pressure(path: Path | str, beneath: Path | str | None = None) -> Pressure | None:
    """A PSI file (`/proc/pressure/memory`, a cgroup's `memory.pressure`). None if it is missing or cannot
    be read (kernels without PSI, or booted with psi=0, answer EOPNOTSUPP; not a regular file, a link out of
    `beneath`) or holds no valid line."""
    try:
        text = read_text(path, beneath=beneath)
    except OSError:
        return None
    return parse_pressure(text)


# --- /proc/stat ---------------------------------------------------------------------------------------------


class CpuSampler:
    """Whole-machine CPU utilisation from the `cpu` line of `/proc/stat`, between successive calls."""

    def __init__(self, proc_root: Path = Path("/proc")) -> None:
        self.path = os.path.join(proc_root, "stat")
        self._beneath = os.fspath(proc_root)
        self.cpu_count: int | None = None  # online CPUs (cpuN lines), known after the first call
        self._prev: tuple[int, int] | None = None  # (busy, total) jiffies
        self._last: float | None = None

    def _read(self) -> tuple[int, int]:
        try:
            text = read_text(self.path, beneath=self._beneath)
        except OSError as exc:
            raise ProcReadError(f"cannot read {self.path}: {_why(exc)}") from exc
        cpus = 0
        times: list[int] | None = None
        for line in text.splitlines():
            if line.startswith("cpu"):
                head, _, rest = line.partition(" ")
                if head == "cpu":
                    try:
                        # user nice system idle iowait irq softirq steal (guest is already in user)
                        times = [int(x) for x in rest.split()[:8]]
                    except ValueError:
                        times = None
                elif head[3:].isdigit():
                    cpus += 1
        if not times or len(times) < 4:
            raise ProcReadError(f"{self.path}: malformed, no cpu line")
        self.cpu_count = cpus or None
        idle = times[3] + (times[4] if len(times) > 4 else 0)
        total = sum(times)
        return total - idle, total

    def percent(self) -> float | None:
        """CPU busy % of the whole machine since the previous call; None on the first call. Two calls
        within one clock tick return the previous figure. Raises ProcReadError if /proc/stat is unreadable."""
        busy, total = self._read()
        prev, self._prev = self._prev, (busy, total)
        if prev is None:
            return None
        d_total = total - prev[1]
        if d_total <= 0:
            self._prev = prev  # keep the older baseline so the next delta is meaningful
            return self._last
        self._last = max(0.0, min(100.0, 100.0 * (busy - prev[0]) / d_total))
        return self._last
