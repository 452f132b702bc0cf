"""Why discovery uses one sparse list and memory comes from cgroups (DESIGN §5), measured: one
`containers.list(sparse=True)` against one `container.stats(stream=False)` per container (each takes about a
second or more: the engine samples twice), on the private test engine of tests/integration/engine.py.

Run as root from the repository root: `python bench/bench_docker_stats.py`. Exits 1 unless the list is at
least ten times cheaper than the cheapest stats call. Moved here from the test suite (it cost ~5 s a run).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.integration.engine import SHM_BYTES, DockerEngine, unique_name, wait_for_shm_fill


def main() -> int:
    engine = DockerEngine().start()
    try:
        sleep = "sh -c 'sleep 3600'"
        containers = [
            engine.run(unique_name("bench-a"), sleep, labels={"com.docker.compose.project": "audio-lab"}),
            engine.run(unique_name("bench-b"), sleep, labels={"com.docker.compose.project": "audio-lab"}),
            engine.run(
                unique_name("bench-shm"),
                f"sh -c 'head -c {SHM_BYTES} /dev/zero > /dev/shm/x; sleep 3600'",
                shm_size="300m",
            ),
        ]
        wait_for_shm_fill(containers[2])
        client = engine.client
        for _ in range(3):  # warm the connection
            client.containers.list(sparse=True)
        rounds = 20
        t0 = time.perf_counter()
        for _ in range(rounds):
            listed = client.containers.list(sparse=True)
        list_s = (time.perf_counter() - t0) / rounds
        stats_s = []
        for c in containers:
            t0 = time.perf_counter()
            c.stats(stream=False)
            stats_s.append(time.perf_counter() - t0)
        print(
            f"[docker timing] containers.list(sparse=True): {list_s * 1000:.1f} ms for {len(listed)}"
            f" containers; container.stats(stream=False): {', '.join(f'{s:.2f} s' for s in stats_s)}"
            f" (engine startup {engine.startup_s:.2f} s, image import {engine.import_s or 0:.2f} s)"
        )
        return 0 if list_s * 10 < min(stats_s) else 1
    finally:
        engine.close()


if __name__ == "__main__":
    raise SystemExit(main())
