"""Every process from `/proc`, cheaply enough to do each tick.

Per tick and process one small file is read: `stat` (ppid, CPU times, start time, and RSS: see `_rss_pages`
for how exact that is, and why `statm` is not read). What changes only when the process runs another program
(command line, user, container from `/proc/PID/cgroup`) is read once per program and cached under (PID,
start time) so a reused PID is read afresh; the cache keeps only the PIDs of the latest scan. An `exec` keeps
the PID and the start time, so the `stat` line read anyway tells it: a new comm (field 2), or a new stack top
(field 28, set by each exec; 0 where the kernel hides it from us: then the comm alone tells). A `sh
wrapper.sh` that execs `python3` is shown as python3 from the next tick. What no stat field tells, a command
line rewritten in place (setproctitle, or one read mid-exec), is caught by reading each command line again
once every REFRESH_SCANS scans, a few processes a scan.
PSS (`smaps_rollup`, which walks every mapping) is read for the top consumers only, by `fill_pss`.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import time
from dataclasses import dataclass
from pathlib import Path

from sparktop.collect.cgroups import CgroupMatch, match_cgroup
from sparktop.collect.procfs import read_text
from sparktop.collect.tree_files import Refused, read_bytes
from sparktop.core.snapshot import ProcessInfo

__all__ = ["ProcessScanner", "fill_pss", "read_pss"]

_PF_KTHREAD = 0x00200000  # task flag of kernel threads (stat field 9)
_COMM_LEN = 15  # the kernel truncates comm to 15 characters
REFRESH_SCANS = 30  # each command line is read again once in this many scans (by PID: a few a scan)


def _read(path: str, beneath: str) -> bytes:
    return read_bytes(path, 4096, beneath)


def _rss_pages(field: bytes) -> int:
    """stat's field 24: `do_task_stat` (fs/proc/array.c) prints `get_mm_rss(mm)`, the sum of the file, anon
    and shmem page counters that statm's resident is made of too (`task_statm`, fs/proc/task_mmu.c); proc(5)
    calls both inaccurate. Since Linux 6.2 (f1a7941243c1) they are per-CPU counters, read without the CPUs'
    pending deltas: each may be off by up to batch x CPUs pages, batch = max(32, 2 x CPUs) (~9 MiB for all
    three on a 20-core Spark with 4 KiB pages). From 6.16 (82241a83cd15) statm adds the deltas up and stat
    does not; reading statm as well cost a fifth of the scan (issue 33), and where memory is counted for
    the top processes, their PSS (`smaps_rollup`, exact) is used. The kernel writes an unsigned long in
    decimal: anything else is a tree someone else wrote, and the process is skipped for the tick."""
    # bytes.isdigit: ASCII digits only (no sign, "_" or other scripts' digits, which int() would take)
    if not field.isdigit() or len(field) > 20 or int(field) >= 1 << 64:
        raise ValueError(f"RSS field {field[:24]!r}")
    return int(field)


@dataclass(slots=True)
class _Static:
    """What is read once per program a process runs (again after an exec or a rename)."""

    start_ticks: int
    comm: bytes  # stat's field 2 as read: another one means a rename or an exec
    start_stack: bytes  # stat's field 28 as read (b"0": hidden from us, or a zombie)
    name: str
    cmdline: str
    user: str | None
    start_time: float
    cgroup: CgroupMatch | None


def _boot_time(proc_root: str) -> float:
    try:
        for line in read_text(os.path.join(proc_root, "stat"), beneath=proc_root).splitlines():
            if line.startswith("btime "):
                return float(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    # No btime: derive it from the uptime, or give up on absolute times being exact.
    try:
        return time.time() - float(read_text(os.path.join(proc_root, "uptime"), beneath=proc_root).split()[0])
    except (OSError, ValueError, IndexError):
        return 0.0


class ProcessScanner:
    """`scan()` lists every process under `proc_root` as ProcessInfo. One instance keeps the per-process
    cache and the previous CPU times (for `cpu_percent`), so keep it across ticks."""

    def __init__(self, proc_root: Path = Path("/proc"), page_size: int | None = None) -> None:
        self.proc_root = str(proc_root)
        self.page_size = page_size or os.sysconf("SC_PAGE_SIZE")
        self.clock_ticks = os.sysconf("SC_CLK_TCK")
        self.boot_time = _boot_time(self.proc_root)
        self._static: dict[int, _Static] = {}
        self._cpu: dict[int, int] = {}  # pid -> utime + stime (clock ticks) at the last scan
        self._last_scan: float | None = None
        self._scans = 0
        self._users: dict[int, str] = {}
        # container id -> the cgroup match of one of its processes, from the latest scan
        self.container_matches: dict[str, CgroupMatch] = {}

    # --- per lifetime -------------------------------------------------------------------------------------

    def _user(self, uid: int) -> str:
        name = self._users.get(uid)
        if name is None:
            try:
                name = pwd.getpwuid(uid).pw_name
            except (KeyError, OverflowError):
                name = str(uid)
            self._users[uid] = name
        return name

    def _read_static(
        self, base: str, comm_raw: bytes, start_stack: bytes, start_ticks: int, kernel_thread: bool
    ) -> _Static:
        """Raises FileNotFoundError/ProcessLookupError when the process is gone; other unreadable files
        (permission, or refused: not a regular file, a link out of the tree) leave their field empty."""
        root = self.proc_root
        comm = comm_raw.decode("utf-8", "replace")
        cmdline = ""
        user = None
        cgroup = None
        try:
            status = _read(base + "status", root)
            i = status.find(b"\nUid:")
            if i >= 0:
                user = self._user(int(status[i + 5 :].split(None, 2)[1]))  # effective uid, as top shows
        except (PermissionError, Refused, ValueError, IndexError):
            pass
        if user is None:
            with contextlib.suppress(PermissionError):
                # the directory belongs to the effective uid
                user = self._user(os.stat(base, follow_symlinks=False).st_uid)
        if not kernel_thread:
            with contextlib.suppress(PermissionError, Refused):
                cmdline = read_text(base + "cmdline", beneath=root).replace("\0", " ").strip()
            with contextlib.suppress(PermissionError, Refused):
                cgroup = match_cgroup(read_text(base + "cgroup", beneath=root))
        name = comm
        if len(comm) >= _COMM_LEN and cmdline:
            # comm is cut at 15 characters: take the full name from the command line when it starts alike.
            exe = os.path.basename(cmdline.split(" ", 1)[0])
            if exe.startswith(comm):
                name = exe
        return _Static(
            start_ticks=start_ticks,
            comm=comm_raw,
            start_stack=start_stack,
            name=name,
            cmdline=cmdline,
            user=user,
            start_time=self.boot_time + start_ticks / self.clock_ticks,
            cgroup=cgroup,
        )

    def _cmdline_changed(self, base: str, info: _Static, kernel_thread: bool) -> bool:
        if kernel_thread:
            return False  # none to read
        try:
            return (
                read_text(base + "cmdline", beneath=self.proc_root).replace("\0", " ").strip() != info.cmdline
            )
        except (PermissionError, Refused):
            return False

    # --- per tick -----------------------------------------------------------------------------------------

    def scan(self) -> list[ProcessInfo]:
        root = self.proc_root
        now = time.monotonic()
        interval = (now - self._last_scan) * self.clock_ticks if self._last_scan is not None else None
        page = self.page_size
        old_static, old_cpu = self._static, self._cpu
        self._scans += 1
        refresh = self._scans % REFRESH_SCANS  # the PIDs read again this scan: pid % REFRESH_SCANS == refresh
        static: dict[int, _Static] = {}
        cpu: dict[int, int] = {}
        containers: dict[str, CgroupMatch] = {}
        out: list[ProcessInfo] = []
        for entry in os.listdir(root):
            if not entry.isdecimal():
                continue
            pid = int(entry)
            base = root + "/" + entry + "/"
            try:
                stat = _read(base + "stat", root)
                lpar = stat.index(b"(")
                rpar = stat.rindex(b")")
                fields = stat[rpar + 2 :].split(None, 26)
                # fields[0] is field 3 (state): field n is fields[n - 3]
                ppid = int(fields[1])
                flags = int(fields[6])
                ticks = int(fields[11]) + int(fields[12])
                start_ticks = int(fields[19])
                start_stack = fields[25] if len(fields) > 25 else b"0"
                rss = _rss_pages(fields[21]) * page
                comm = stat[lpar + 1 : rpar]
                kthread = bool(flags & _PF_KTHREAD)
                info = old_static.get(pid)
                known = info is not None and info.start_ticks == start_ticks  # not a reused PID
                if (
                    info is None
                    or not known
                    or info.comm != comm
                    or (start_stack != b"0" and start_stack != info.start_stack)
                    or (pid % REFRESH_SCANS == refresh and self._cmdline_changed(base, info, kthread))
                ):
                    # New, or the same process now running another program (an exec) or renamed (a stack
                    # top gone to 0 is a zombie, or access lost: no exec), or a command line rewritten.
                    info = self._read_static(base, comm, start_stack, start_ticks, kthread)
            except (OSError, ValueError, IndexError):
                continue  # gone mid-scan, unreadable, or garbage: skip it this tick
            static[pid] = info
            cpu[pid] = ticks
            cpu_percent = None
            if known and interval:
                cpu_percent = round(max(0, ticks - old_cpu[pid]) * 100.0 / interval, 1)
            cgroup = info.cgroup
            if cgroup is not None and cgroup.container_id not in containers:
                containers[cgroup.container_id] = cgroup
            out.append(
                ProcessInfo(
                    pid=pid,
                    ppid=ppid,
                    name=info.name,
                    cmdline=info.cmdline,
                    user=info.user,
                    rss=rss,
                    cpu_percent=cpu_percent,
                    container_id=cgroup.container_id if cgroup is not None else None,
                    start_time=info.start_time,
                    start_ticks=info.start_ticks,
                )
            )
        # Only the PIDs seen now stay cached: memory is bounded by the live process count.
        self._static, self._cpu = static, cpu
        self.container_matches = containers
        self._last_scan = now
        return out


def read_pss(pid: int, proc_root: Path | str = Path("/proc")) -> int | None:
    """PSS in bytes from `/proc/PID/smaps_rollup`; None when it cannot be read (gone, or another user's
    process when not root) or has no Pss line. Costly: the kernel walks every page of the process (about
    20 µs per MiB of RSS), so a 60 GiB process takes around a second."""
    try:
        text = read_text(f"{proc_root}/{pid}/smaps_rollup", beneath=proc_root)
    except OSError:
        return None
    i = text.find("\nPss:")
    if i < 0:
        return None
    try:
        return int(text[i + 5 :].split(None, 1)[0]) * 1024
    except (ValueError, IndexError):
        return None


def fill_pss(procs: list[ProcessInfo], top_n: int = 10, proc_root: Path = Path("/proc")) -> None:
    """Set `pss` for the `top_n` processes by RSS (only those: see `read_pss` for the cost). Processes we
    may not inspect or that are gone keep None."""
    for proc in sorted((p for p in procs if p.rss > 0), key=lambda p: p.rss, reverse=True)[:top_n]:
        pss = read_pss(proc.pid, proc_root)
        if pss is not None:
            proc.pss = pss
