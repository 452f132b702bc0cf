"""A simulated DGX Spark, for trying sparktop without one and for deterministic tests and screenshots.

`DemoSource(scenario, seed)` plays a scenario from `spark-resource-limits.txt` on a made-up GB10: one
121.7 GiB unified pool, 20 CPU cores, a 48-SM Blackwell GPU that reports what NVML reports on GB10 (no device
memory, per-process memory, ATS addressing). Containers have compose labels, cgroup memory and processes; a
training run can creep; an Ollama runner bursts. Nothing reads the wall clock or the machine: each `sample()`
moves simulated time on by `step` seconds, so the snapshots depend only on (scenario, seed, samples taken,
stop/kill calls made). The first sample is stamped `start`.

`DemoSource.controller()` stops and kills the simulated containers, so the UI's stop flow (including a
container that ignores SIGTERM and needs a kill) can be shown without Docker.

The package: `scenarios.py` holds what each scenario runs (data), `source.py` the simulation that plays it.
"""

from sparktop.sources.demo.scenarios import CONTENTION_STARTS_S, DEMO_SCENARIOS
from sparktop.sources.demo.simulation import DemoController, DemoSource

__all__ = ["CONTENTION_STARTS_S", "DEMO_SCENARIOS", "DemoController", "DemoSource"]
