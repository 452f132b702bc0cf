"""Split the pool's `used` into consumers, so every byte is owned by someone or shown as unattributed.

On GB10 a CUDA allocation is in neither RSS nor the cgroup, yet it lowers MemAvailable: a consumer's footprint
is its CPU side (cgroup working set, or RSS/PSS) plus its GPU side (NVML per-process memory). Whatever the
consumers do not explain (kernel, driver, page cache) is `unattributed`, never hidden.
"""

from __future__ import annotations

from collections.abc import Iterable

from sparktop.core.safe_text import error_line
from sparktop.core.snapshot import (
    Accounting,
    Consumer,
    ContainerInfo,
    GpuMemoryAccount,
    GpuMemoryShare,
    GpuReport,
    HostMemory,
    ProcessInfo,
    Snapshot,
    container_label,
    process_key,
)

TOP_HOST_PROCESSES = 8
HOST_OTHER_LABEL = "other host processes"  # the group of host processes not named one by one


def host_processes(
    processes: Iterable[ProcessInfo], containers: Iterable[ContainerInfo]
) -> list[ProcessInfo]:
    """The processes counted as the host's own: in no container, or in one discovery does not list."""
    container_ids = {c.id for c in containers}
    return [p for p in processes if not p.container_id or p.container_id not in container_ids]


def _process_cpu_bytes(proc: ProcessInfo) -> int:
    # PSS splits shared pages between their users, so it over-counts less than RSS where we have it; a PSS
    # read before the process grew or shrank is not used (RSS is fresh every tick).
    return proc.cpu_bytes


def account(
    memory: HostMemory,
    gpu: GpuReport,
    processes: Iterable[ProcessInfo],
    containers: Iterable[ContainerInfo],
    top_processes: int = TOP_HOST_PROCESSES,
    names_pending: bool = False,
) -> Accounting:
    processes = list(processes)
    containers = list(containers)
    used = memory.used
    # Only a unified-memory GPU draws from the host pool; a discrete GPU's memory is shown apart.
    gpu_in_pool = gpu.unified_memory
    gpu_by_pid = gpu.gpu_bytes_by_pid()
    known_pids = {p.pid for p in processes}
    for container in containers:
        known_pids.update(container.pids)

    def pool_gpu(nbytes: int) -> int:
        return nbytes if gpu_in_pool else 0

    consumers: list[Consumer] = []
    rss_by_container: dict[str, int] = {}
    for proc in processes:
        if proc.container_id:
            rss_by_container[proc.container_id] = rss_by_container.get(proc.container_id, 0) + proc.rss

    def device_gpu(nbytes: int) -> int:
        return 0 if gpu_in_pool else nbytes

    owner_of_pid: dict[int, Consumer] = {}  # for the discrete GPUs' own accounts
    for container in containers:
        gpu_bytes = sum(gpu_by_pid.get(pid, 0) for pid in container.pids)
        cpu = container.memory.working_set if container.memory else rss_by_container.get(container.id, 0)
        consumer = Consumer(
            key=f"container:{container.id}",
            label=container_label(container, names_pending),
            kind="container",
            cpu_bytes=cpu,
            gpu_bytes=pool_gpu(gpu_bytes),
            device_gpu_bytes=device_gpu(gpu_bytes),
        )
        consumers.append(consumer)
        owner_of_pid.update(dict.fromkeys(container.pids, consumer))

    host = host_processes(processes, containers)
    # Sized by all they hold, GPU memory included: on a discrete GPU too, the process holding 10 GB of it
    # is named rather than lost in "other host processes".
    host_sized = sorted(host, key=lambda p: _process_cpu_bytes(p) + gpu_by_pid.get(p.pid, 0), reverse=True)
    for proc in host_sized[:top_processes]:
        nbytes = gpu_by_pid.get(proc.pid, 0)
        consumer = Consumer(
            key=process_key(proc),
            label=f"{proc.name} ({proc.pid})",
            kind="process",
            cpu_bytes=_process_cpu_bytes(proc),
            gpu_bytes=pool_gpu(nbytes),
            device_gpu_bytes=device_gpu(nbytes),
        )
        consumers.append(consumer)
        owner_of_pid[proc.pid] = consumer
    rest = host_sized[top_processes:]
    if rest:
        rest_gpu = sum(gpu_by_pid.get(p.pid, 0) for p in rest)
        consumer = Consumer(
            key="host-other",
            label=f"{HOST_OTHER_LABEL} ({len(rest)})",
            kind="host-other",
            cpu_bytes=sum(_process_cpu_bytes(p) for p in rest),
            gpu_bytes=pool_gpu(rest_gpu),
            device_gpu_bytes=device_gpu(rest_gpu),
        )
        consumers.append(consumer)
        owner_of_pid.update((p.pid, consumer) for p in rest)

    # NVML PIDs we cannot see in /proc (another PID namespace, or gone since) still hold memory.
    unexplained_gpu = sum(n for pid, n in gpu_by_pid.items() if pid not in known_pids)
    if unexplained_gpu and gpu_in_pool:
        consumers.append(
            Consumer(
                key="gpu-unexplained",
                label="GPU memory of unseen processes",
                kind="gpu-unexplained",
                gpu_bytes=unexplained_gpu,
            )
        )

    overcount = _fit_to_used(consumers, used)
    attributed = sum(c.total for c in consumers)
    gpu_total = sum(gpu_by_pid.values())
    return Accounting(
        used=used,
        consumers=consumers,
        unattributed=used - attributed,
        gpu_outside_pool=0 if gpu_in_pool else gpu_total,
        overcount_removed=overcount,
        gpu_memory=[] if gpu_in_pool else _device_accounts(gpu, owner_of_pid),
    )


def _device_accounts(gpu: GpuReport, owner_of_pid: dict[int, Consumer]) -> list[GpuMemoryAccount]:
    """Each discrete GPU's own memory by consumer (the same keys as in the host pool, so a view can draw
    both bars in the same colours). A GPU whose memory NVML does not report is left out."""
    accounts = []
    for state in gpu.gpus:
        if state.unified_memory or state.memory_total is None:
            continue
        by_key: dict[str, GpuMemoryShare] = {}
        for proc in state.processes:
            if not proc.used_bytes:
                continue
            owner = owner_of_pid.get(proc.pid)
            if owner is not None:
                key, label, kind = owner.key, owner.label, owner.kind
            else:  # another PID namespace, or gone since NVML listed it
                key, label, kind = "gpu-unexplained", "processes not seen in /proc", "gpu-unexplained"
            share = by_key.setdefault(key, GpuMemoryShare(key=key, label=label, kind=kind, nbytes=0))
            share.nbytes += proc.used_bytes
        shares = sorted(by_key.values(), key=lambda s: s.nbytes, reverse=True)
        used = state.memory_used if state.memory_used is not None else sum(s.nbytes for s in shares)
        accounts.append(
            GpuMemoryAccount(
                index=state.index,
                name=state.name,
                total=state.memory_total,
                used=used,
                shares=shares,
                other=max(0, used - sum(s.nbytes for s in shares)),
            )
        )
    return accounts


def fill_accounting(snapshot: Snapshot) -> Snapshot:
    """Give `snapshot` its accounting if it has none. A failure in `account` (a bug, a value it did not
    expect) must not cost the user the pool: `used` is still true, so it is shown whole as unattributed and
    the failure becomes one line in `errors`, on screen with the rest of the tick's problems."""
    if snapshot.accounting is not None:
        return snapshot
    try:
        snapshot.accounting = account(
            snapshot.memory,
            snapshot.gpu,
            snapshot.processes,
            snapshot.containers,
            names_pending=snapshot.names_pending,
        )
    except Exception as exc:
        snapshot.accounting = unattributed_only(snapshot.memory)
        snapshot.errors.append(f"accounting failed ({error_line(exc)}); "
                               "the pool is shown as unattributed")  # fmt: skip
    return snapshot


def unattributed_only(memory: HostMemory) -> Accounting:
    """The pool with nobody named: what the dashboard shows when attribution failed."""
    return Accounting(used=memory.used, unattributed=memory.used)


def _fit_to_used(consumers: list[Consumer], used: int) -> int:
    """RSS counts shared pages once per process, so consumers can add up to more than `used`. Take the
    excess off the CPU sides (GPU allocations are exact) so the parts always sum to `used`: first the
    host-wide group, then the named host processes (RSS is where double counting happens), and the
    containers last (a cgroup's working set is counted once by the kernel). Returns the bytes removed."""
    excess = sum(c.total for c in consumers) - used
    if excess <= 0:
        return 0
    removed = 0
    for kinds in (("host-other",), ("process",), ("container", "gpu-unexplained")):
        group = [c for c in consumers if c.kind in kinds]
        removed += _trim_proportionally(group, excess - removed)
        if removed >= excess:
            break
    return removed


def _trim_proportionally(group: list[Consumer], excess: int) -> int:
    """Take up to `excess` bytes off the CPU sides of `group`, in proportion to their size, exactly."""
    cpu_total = sum(c.cpu_bytes for c in group)
    if excess <= 0 or cpu_total == 0:
        return 0
    target = min(excess, cpu_total)
    removed = 0
    for consumer in group:
        cut = min(consumer.cpu_bytes, consumer.cpu_bytes * target // cpu_total)
        consumer.cpu_bytes -= cut
        removed += cut
    # Integer division leaves a few bytes; take them from the largest so the total is exact.
    for consumer in sorted(group, key=lambda c: c.cpu_bytes, reverse=True):
        if removed >= target:
            break
        cut = min(consumer.cpu_bytes, target - removed)
        consumer.cpu_bytes -= cut
        removed += cut
    return removed
