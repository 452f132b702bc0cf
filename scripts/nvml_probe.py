"""Print what the driver's NVML answers, raw, to the calls behind sparktop's `sm` column and throttle line.

Run on a machine with an NVIDIA GPU, ideally while something computes on it:

    .venv/bin/python scripts/nvml_probe.py [--window 2]

For each GPU: the SM clock and its maximum, the clocks event reasons under both names (the current
nvmlDeviceGetCurrentClocksEventReasons and the older ...ClocksThrottleReasons) as a bitmask and decoded, the
compute processes, and both per-process utilisation calls (nvmlDeviceGetProcessesUtilizationInfo and
nvmlDeviceGetProcessUtilization) asked for the samples of the last `--window` seconds and for all they keep
(timestamp 0). Then sparktop's own collector reads twice, a second apart, and says what it made of it. An
error is printed as NVML's name for it, never hidden.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import time
from collections.abc import Callable
from typing import Any

import pynvml

from sparktop.analysis.throttle import throttle_line
from sparktop.collect.nvml import NvmlCollector
from sparktop.core.clock_reasons import decode


def ask(label: str, call: Callable[[], Any]) -> Any:
    try:
        value = call()
    except pynvml.NVMLError as exc:
        print(f"  {label}: NVMLError {exc.value} ({exc})")
        return None
    except AttributeError as exc:  # this pynvml lacks the function
        print(f"  {label}: not in this pynvml ({exc})")
        return None
    print(f"  {label}: {value!r}")
    return value


def samples(label: str, call: Callable[[], Any]) -> None:
    found = ask(label, lambda: [(s.pid, s.timeStamp, s.smUtil, s.memUtil) for s in call()])
    if found is not None:
        print(f"    {len(found)} samples as (pid, timeStamp µs, smUtil %, memUtil %)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--window", type=float, default=2.0, help="seconds of samples to ask for (default 2)")
    args = parser.parse_args()
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError as exc:
        print(f"nvml_probe: NVML cannot start here: {exc}")
        return 1
    try:
        try:  # pynvml has no __version__; the distribution's metadata has it
            library = importlib.metadata.version("nvidia-ml-py")
        except importlib.metadata.PackageNotFoundError:
            library = "?"
        print(f"driver {pynvml.nvmlSystemGetDriverVersion()}, nvidia-ml-py {library}")
        for index in range(pynvml.nvmlDeviceGetCount()):
            probe_device(index, pynvml.nvmlDeviceGetHandleByIndex(index), args.window)
    finally:
        pynvml.nvmlShutdown()

    print("sparktop's collector, two reads a second apart:")
    collector = NvmlCollector()
    try:
        for _ in range(2):
            report = collector.collect()
            time.sleep(1.0)
        if not report.available:
            print(f"  not available: {report.reason}")
        for gpu in report.gpus:
            by_pid = {p.pid: p.sm_pct for p in gpu.processes}
            print(f"  GPU {gpu.index}: sm % by pid {by_pid}")
            names = gpu.clocks_event_reason_names
            print(f"    clocks event reasons {gpu.clocks_event_reasons!r} = {names}")
            print(f"    throttle: {throttle_line(gpu, time.time()) or 'none'}")
            for metric in (
                "sm_pct",
                "process_utilization_info",
                "process_utilization",
                "clocks_event_reasons",
            ):
                if metric in gpu.unsupported:
                    print(f"    {metric}: {gpu.unsupported[metric]}")
    finally:
        collector.close()
    return 0


def probe_device(index: int, h: Any, window: float) -> None:
    print(f"GPU {index}: {pynvml.nvmlDeviceGetName(h)}")
    ask("SM clock (MHz)", lambda: pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_SM))
    ask("max SM clock (MHz)", lambda: pynvml.nvmlDeviceGetMaxClockInfo(h, pynvml.NVML_CLOCK_SM))
    ask("utilisation (gpu %, memory %)", lambda: tuple(vars_of(pynvml.nvmlDeviceGetUtilizationRates(h))))
    for name in ("nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetCurrentClocksThrottleReasons"):
        mask = ask(name, lambda name=name: getattr(pynvml, name)(h))
        if mask is not None:
            print(f"    = 0x{mask:x}: {', '.join(decode(mask)) or 'none'}")
    ask(
        "compute processes (pid, usedGpuMemory)",
        lambda: [(p.pid, p.usedGpuMemory) for p in pynvml.nvmlDeviceGetComputeRunningProcesses(h)],
    )
    since = int((time.time() - window) * 1e6)
    for stamp, what in ((since, f"last {window:g} s"), (0, "all kept")):
        samples(
            f"nvmlDeviceGetProcessesUtilizationInfo ({what})",
            lambda stamp=stamp: pynvml.nvmlDeviceGetProcessesUtilizationInfo(h, stamp),
        )
        samples(
            f"nvmlDeviceGetProcessUtilization ({what})",
            lambda stamp=stamp: pynvml.nvmlDeviceGetProcessUtilization(h, stamp),
        )


def vars_of(struct: Any) -> list[Any]:
    return [getattr(struct, name) for name, _ in struct._fields_]


if __name__ == "__main__":
    raise SystemExit(main())
