"""Engine headroom from /proc/meminfo, the way cudaMemGetInfo counts on GB10 (page cache is not free)."""

from __future__ import annotations

from sparktop.analysis.headroom import DROP_CACHES, engine_headroom, vllm_startup_check
from sparktop.collect.procfs import read_meminfo
from sparktop.core.snapshot import HostMemory

GIB = 1024**3
KIB = 1024

# An idle Spark after loading a model from disk: 17 GiB of page cache, MemAvailable ~119 GiB.
MEMINFO = """MemTotal:       127601584 kB
MemFree:        104857600 kB
MemAvailable:   124780544 kB
Buffers:          1048576 kB
Cached:          17825792 kB
SwapCached:             0 kB
Shmem:            1048576 kB
SReclaimable:     2097152 kB
SwapTotal:       16777212 kB
SwapFree:        16777212 kB
"""


def test_cuda_free_is_memfree_and_droppable_is_clean_cache_plus_slab(tmp_path):
    (tmp_path / "meminfo").write_text(MEMINFO)
    memory = read_meminfo(tmp_path)
    room = engine_headroom(memory)
    assert room.cuda_free == 104857600 * KIB
    assert room.droppable == (17825792 - 1048576 + 1048576 + 2097152) * KIB
    assert room.available - room.cuda_free > 15 * GIB  # what MemAvailable promises and CUDA won't


def test_vllm_check_fails_now_and_passes_after_dropping_caches(tmp_path):
    (tmp_path / "meminfo").write_text(MEMINFO)
    memory = read_meminfo(tmp_path)
    check = vllm_startup_check(0.87, memory)  # asks 0.87 × 121.7 GiB = 105.9 GiB; CUDA says 100 GiB free
    assert not check.passes and check.passes_after_drop
    assert DROP_CACHES in check.message()
    assert vllm_startup_check(0.7, memory).passes
    hopeless = vllm_startup_check(0.99, memory)
    assert not hopeless.passes_after_drop and "lower gpu_memory_utilization" in hopeless.message()


def test_no_negative_figures():
    memory = HostMemory(total=10, available=0, free=0, cached=1, shmem=5)
    room = engine_headroom(memory)
    assert room.cuda_free == 0 and room.droppable == 0
