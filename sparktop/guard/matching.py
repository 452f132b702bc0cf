"""What each `[guard]` stop rule matches in a snapshot, and, where it matches nothing, why not.

A `process` rule is a glob (`*`, `?`, `[...]`) matched, whole, against every form under which people know
a host process — what `pgrep -f` users expect, without matching inside a longer line:

- its name (comm, or the full program name where the kernel cut comm at 15 characters): `python3`;
- its command line as the kernel holds it (arguments joined by spaces):
  `/home/u/.venv/bin/python train.py --lr 3e-4`;
- that command line with the program cut to its base name: `python train.py --lr 3e-4` (a venv's python, a
  pyenv shim once it has exec'd the real one, a systemd `ExecStart=` with its absolute path);
- and with every path in it cut to its base name: `python3 train.py` for `/usr/bin/python3 /opt/app/train.py`.

So `python train.py*` matches all of those. A rule's `user` (a name or a uid) keeps it to that owner's
processes. Processes inside containers never match a process rule (name the container instead), nor do
PID 1, kernel threads, or, on the live machine, the guard itself.
A `container` rule is a glob on running containers' names, a `compose` rule a compose project: both need
the container engine's names, so without Docker they cannot match, and `unmatchable` says so.
"""

from __future__ import annotations

import contextlib
import fnmatch
import functools
import os
import pwd
from dataclasses import dataclass, field

from sparktop.core.safe_text import visible
from sparktop.core.snapshot import ContainerInfo, ProcessInfo, Snapshot
from sparktop.settings.guard import StopRule

NEAR_MISSES_SHOWN = 3


@dataclass(frozen=True)
class Match:
    """One thing a rule matches now: a host process, a container, or a compose project's containers."""

    key: str  # stable across ticks: the growth of this very thing is tracked under it
    label: str
    bytes: int
    process: ProcessInfo | None = None
    containers: list[ContainerInfo] = field(default_factory=list)
    user: str | None = None


def process_key(p: ProcessInfo) -> str:
    """The process by PID and start (ticks where known): a reused PID is another key."""
    start = p.start_ticks if p.start_ticks is not None else int(p.start_time or 0)
    return f"process:{p.pid}:{start}"


def process_bytes(p: ProcessInfo, gpu_by_pid: dict[int, int]) -> int:
    """Its resident memory plus its GPU memory. RSS, not PSS: PSS is re-read for a few processes now and
    then, and a switch between the two would read as growth."""
    gpu = p.gpu_bytes if p.gpu_bytes is not None else gpu_by_pid.get(p.pid)
    return p.rss + (gpu or 0)


def _base(word: str) -> str:
    return os.path.basename(word) if "/" in word and not word.endswith("/") else word


def command_forms(p: ProcessInfo) -> list[str]:
    """Every form a process rule is matched against (the module docstring lists them), without repeats."""
    forms = [p.name]
    if p.cmdline:
        words = p.cmdline.split(" ")
        forms.append(p.cmdline)
        forms.append(" ".join([_base(words[0]), *words[1:]]))
        forms.append(" ".join(_base(w) for w in words))
    return list(dict.fromkeys(forms))


def _program_names(p: ProcessInfo) -> list[str]:
    """What a process runs: its name, and its program's base name."""
    return [p.name, _base(p.cmdline.split(" ", 1)[0])] if p.cmdline else [p.name]


def _matches(pattern: str, values: list[str]) -> bool:
    return any(fnmatch.fnmatchcase(v, pattern) for v in values)


@functools.lru_cache(maxsize=64)
def _owner_names(user: str) -> frozenset[str]:
    """A rule's `user` as a process's owner may read in a snapshot: the name, and its uid (or the reverse)."""
    names = {user}
    with contextlib.suppress(KeyError, OverflowError, ValueError):  # no such user here: the name alone
        names.add(pwd.getpwuid(int(user)).pw_name if user.isdecimal() else str(pwd.getpwnam(user).pw_uid))
    return frozenset(names)


def _never_a_target(p: ProcessInfo, myself: int | None) -> bool:
    """PID 1 (the machine goes down with it), kernel threads (kthreadd's children: no signal stops them) and
    the guard's own process (`*python*` must not stop the guard)."""
    return p.pid in (1, 2) or p.ppid == 2 or p.pid == myself


def _label(p: ProcessInfo) -> str:
    return f"{p.name} ({p.pid})"


@dataclass
class RuleReport:
    """What one rule matches now (`matches`), and a line saying why not where it matches nothing."""

    rule: StopRule
    matches: list[Match]
    why_not: str | None = None


def match_rule(rule: StopRule, snapshot: Snapshot, sizes: dict[str, int] | None = None) -> RuleReport:
    """What `rule` matches in `snapshot`. `sizes`: consumer totals by accounting key (containers)."""
    if sizes is None:
        sizes = {c.key: c.total for c in (snapshot.accounting.consumers if snapshot.accounting else [])}
    if rule.process:
        return _match_process(rule, rule.process, snapshot)
    engine = snapshot.docker
    no_engine = None
    if not engine.available:
        no_engine = f"the container engine cannot be reached ({engine.reason or 'no reason given'})"
    if rule.container:
        found = [c for c in snapshot.containers if c.name and fnmatch.fnmatchcase(c.name, rule.container)]
        matches = [
            Match(f"container:{c.id}", c.label, sizes.get(f"container:{c.id}", 0), containers=[c])
            for c in found
        ]
        why = None
        if not matches:
            names = sorted({c.name for c in snapshot.containers if c.name})
            why = no_engine or (
                f"no running container is named {rule.container}"
                + (f" (running: {', '.join(names[:8])}{' …' if len(names) > 8 else ''})" if names else "")
            )
        return RuleReport(rule, matches, visible(why) if why else None)
    project = rule.compose or ""
    members = [c for c in snapshot.containers if c.compose_project == project]
    if members:
        total = sum(sizes.get(f"container:{c.id}", 0) for c in members)
        return RuleReport(
            rule, [Match(f"compose:{project}", f"compose {project}", total, containers=members)]
        )
    projects = sorted({c.compose_project for c in snapshot.containers if c.compose_project})
    why = no_engine or (
        f"no running container belongs to compose project {project}"
        + (f" (projects running: {', '.join(projects)})" if projects else "")
    )
    return RuleReport(rule, [], visible(why))


def _match_process(rule: StopRule, pattern: str, snapshot: Snapshot) -> RuleReport:
    gpu_by_pid = snapshot.gpu.gpu_bytes_by_pid()
    owners = _owner_names(rule.user) if rule.user is not None else None
    matches: list[Match] = []
    other_owner: list[ProcessInfo] = []
    in_container: list[ProcessInfo] = []
    myself = os.getpid() if snapshot.source == "live" else None
    for p in snapshot.processes:
        if _never_a_target(p, myself) or not _matches(pattern, command_forms(p)):
            continue
        if p.container_id is not None:
            in_container.append(p)
        elif owners is not None and p.user not in owners:
            other_owner.append(p)
        else:
            matches.append(
                Match(process_key(p), _label(p), process_bytes(p, gpu_by_pid), process=p, user=p.user)
            )
    if matches:
        return RuleReport(rule, matches)
    reasons = []
    if other_owner:
        shown = ", ".join(f"{_label(p)} of user {p.user or '?'}" for p in other_owner[:NEAR_MISSES_SHOWN])
        reasons.append(f"it matches only other users' processes ({shown}), not {rule.user}'s")
    if in_container:
        shown = ", ".join(f"{_label(p)} in container {(p.container_id or '')[:12]}" for p in in_container[:3])
        reasons.append(f"it matches processes inside containers only ({shown}): name the container instead")
    if not reasons:
        reasons.append(_near_misses(pattern, snapshot))
    return RuleReport(rule, [], visible("; ".join(reasons)))


def _near_misses(pattern: str, snapshot: Snapshot) -> str:
    """Why a process rule matches nothing: the processes running its program, with what they run."""
    program = pattern.split(" ", 1)[0]
    host = [p for p in snapshot.processes if p.container_id is None]
    same_program = [
        p for p in host if _matches(program, _program_names(p)) or _matches(_base(program), _program_names(p))
    ]
    if not same_program or program in ("*", ""):
        return f"nothing running matches ({len(host)} host processes looked at)"
    shown = "; ".join(
        f"{_label(p)}: {command_forms(p)[-1] if p.cmdline else p.name}"
        for p in same_program[:NEAR_MISSES_SHOWN]
    )
    more = (
        f" and {len(same_program) - NEAR_MISSES_SHOWN} more" if len(same_program) > NEAR_MISSES_SHOWN else ""
    )
    return f"{len(same_program)} processes run {program}, none with what follows in the rule ({shown}{more})"


def match_rules(rules: list[StopRule], snapshot: Snapshot) -> list[RuleReport]:
    sizes = {c.key: c.total for c in (snapshot.accounting.consumers if snapshot.accounting else [])}
    return [match_rule(rule, snapshot, sizes) for rule in rules]


def unmatchable(reports: list[RuleReport]) -> str | None:
    """One line naming every rule that cannot match now, with why; None when every rule matches."""
    missing = [f"{r.rule.describe()} ({r.why_not})" for r in reports if not r.matches]
    return "; ".join(missing) if missing else None
