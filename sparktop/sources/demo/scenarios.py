"""The demo's scenarios as data: for each `--demo` name, the containers it runs (their processes, memory, GPU
memory, activity and model servers), the page cache and kernel memory beside them, and the host's own
processes. `source.py` plays them; nothing here moves with time."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

from sparktop.core.snapshot import GB, GIB, MIB

DEMO_SCENARIOS: dict[str, str] = {
    "default": "audio pipeline + Ollama llama3.1:70b + a training run whose memory creeps (~1.3 GB/min)",
    "audio": "scenario A: faster-whisper + llama3.1:8b + F5-TTS, sequential and calm",
    "training": "the SSD Tetris training run alone: SMs saturated, memory creeping",
    "critical": "near exhaustion: under 5 % available, memory pressure (PSI) high and sustained",
    "everything": "scenario G: training + Omni + Chatterbox + llama3.1:70b + Devstral (~120 GB)",
    "idle": "nothing loaded: desktop, Docker and SSH only",
    "discrete": "not a Spark: a workstation with a discrete H100 (80 GB of its own memory), the audio "
    "pipeline, llama3.1:8b and a training run on the GPU",
    "servers": "model servers: one Ollama holding three models, a vLLM server that reserved 30 %, whisper",
    "contention": "a vLLM server answering steadily; a minute in, a training run starts beside it and the "
    "server's tokens/s per request drops about 2.2x (the measured slowdown appears 20 s later)",
}

Activity = Literal["steady", "bursty", "pipeline", "idle"]


@dataclass(frozen=True)
class ProcessSpec:
    """One process in a container: its command line, memory (CPU and GPU side), CPU use and user."""

    name: str
    cmdline: str
    rss: int
    gpu: int = 0  # bytes of GPU memory (0: no CUDA context)
    cpu: float = 2.0  # CPU percent while the workload is busy
    user: str = "root"


@dataclass(frozen=True)
class WorkloadSpec:
    """One container: what it runs, what it holds, how it behaves."""

    key: str
    name: str
    image: str
    project: str | None
    service: str | None
    procs: tuple[ProcessSpec, ...]
    anon: int
    file: int
    shmem: int = 64 * MIB
    limit: int | None = None
    activity: Activity = "pipeline"
    busy_util: float = 85.0
    uptime_s: float = 3 * 3600.0
    # Creep: GPU bytes per second on the first process, CPU (anon) bytes per second, and the period after
    # which the run "ends an epoch" and releases what it gathered (keeps long demos inside the pool).
    creep_gpu: float = 0.0
    creep_cpu: float = 0.0
    creep_cycle_s: float = 30 * 60.0
    ignores_sigterm: bool = False
    # A model server in the container: "ollama" (one loaded model per `ollama runner` process, named in
    # `models` in the same order) or "vllm" (one model; `models[0]`, reserving gpu_memory_utilization).
    server: str | None = None
    port: int = 0
    models: tuple[str, ...] = ()
    gpu_memory_utilization: float | None = None
    # Seconds after the demo's start that it starts (0: it was running already, for `uptime_s`).
    starts_after_s: float = 0.0


def _gb(x: float) -> int:
    return int(x * GB)


_WHISPER = WorkloadSpec(
    key="whisper",
    name="audio-lab-whisper-1",
    image="audio-lab/whisper:large-v3-cuda",
    project="audio-lab",
    service="whisper",
    procs=(
        ProcessSpec(
            "python3",
            "python3 -m uvicorn stt_server:app --host 0.0.0.0 --port 8001 "
            "# faster-whisper large-v3 (CTranslate2, float16)",
            rss=_gb(1.35),
            gpu=_gb(3.05),
            cpu=95.0,
        ),
    ),
    anon=_gb(1.30),
    file=_gb(0.55),
    limit=8 * GIB,
    activity="pipeline",
    busy_util=72.0,
    uptime_s=5 * 3600.0 + 612,
)

_F5 = WorkloadSpec(
    key="f5-tts",
    name="audio-lab-f5-tts-1",
    image="audio-lab/f5-tts:1.1.7",
    project="audio-lab",
    service="f5-tts",
    procs=(
        ProcessSpec(
            "python3",
            "python3 -m f5_tts.socket_server --port 8002 --model F5TTS_v1_Base",
            rss=_gb(1.7),
            gpu=_gb(2.85),
            cpu=110.0,
        ),
    ),
    anon=_gb(1.62),
    file=_gb(0.45),
    limit=8 * GIB,
    activity="pipeline",
    busy_util=64.0,
    uptime_s=5 * 3600.0 + 598,
)


def _ollama(
    key: str, model: str, blob: str, rss: float, gpu: float, file: float, util: float
) -> WorkloadSpec:
    return WorkloadSpec(
        key=key,
        name="ollama",
        image="ollama/ollama:0.12.6",
        project="llm",
        service="ollama",
        procs=(
            ProcessSpec("ollama", "/bin/ollama serve", rss=_gb(0.09), cpu=1.5),
            ProcessSpec(
                "ollama",
                f"/usr/bin/ollama runner --model /root/.ollama/models/blobs/sha256-{blob} "
                f"--ctx-size 8192 --batch-size 512 --n-gpu-layers 999 --threads 20 --parallel 1 "
                f"--port 40613  # {model}",
                rss=_gb(rss),
                gpu=_gb(gpu),
                cpu=102.0,
            ),
        ),
        anon=_gb(rss + 0.15),
        file=_gb(file),
        activity="bursty",
        busy_util=util,
        uptime_s=26 * 3600.0 + 1_204,
        server="ollama",
        port=11434,
        models=(model,),
    )


_OLLAMA_70B = _ollama(
    "ollama-70b",
    "llama3.1:70b-instruct-q4_K_M",
    "de20d2cf2dc430b1717a8b07a9df029d651f3895dbffec4729a3902a6fe344c9",
    rss=0.95,
    gpu=40.2,
    file=3.1,
    util=96.0,
)
_OLLAMA_8B = _ollama(
    "ollama-8b",
    "llama3.1:8b-instruct-q4_K_M",
    "667b0c1932bc6ffc593ed1d03f895bf2dc8dc6df21db3042284a6f4416b06a29",
    rss=0.55,
    gpu=5.1,
    file=1.2,
    util=88.0,
)


def _runner(model: str, blob: str, ctx: int, rss: float, gpu: float) -> ProcessSpec:
    return ProcessSpec(
        "ollama",
        f"/usr/bin/ollama runner --model /root/.ollama/models/blobs/sha256-{blob} --ctx-size {ctx} "
        f"--batch-size 512 --n-gpu-layers 999 --threads 20 --parallel 1  # {model}",
        rss=_gb(rss),
        gpu=_gb(gpu),
        cpu=102.0,
    )


# One Ollama holding three models, one runner each (how Ollama loads them).
_OLLAMA_MULTI = replace(
    _OLLAMA_8B,
    key="ollama-multi",
    procs=(
        ProcessSpec("ollama", "/bin/ollama serve", rss=_gb(0.09), cpu=1.5),
        _runner("qwen3:32b", "3291abe70f16ee9682de7bfae08db537", 16384, 0.8, 21.4),
        _runner("gemma3:12b", "e8ad13eff07a78d89926e9e8b882317d", 8192, 0.6, 9.1),
        _runner("nomic-embed-text:latest", "970aa74c0a90ef7482477cf803618e77", 2048, 0.2, 0.6),
    ),
    anon=_gb(1.75),
    file=_gb(2.8),
    models=("qwen3:32b", "gemma3:12b", "nomic-embed-text:latest"),
)

_VLLM = WorkloadSpec(
    key="vllm",
    name="vllm-qwen3-8b",
    image="vllm/vllm-openai:v0.11.0",
    project="llm",
    service="vllm",
    procs=(
        ProcessSpec(
            "python3",
            "python3 -m vllm.entrypoints.openai.api_server --model Qwen/Qwen3-8B --port 8000 "
            "--gpu-memory-utilization 0.3 --max-model-len 32768",
            rss=_gb(3.4),
            # vLLM takes gpu_memory_utilization × total at start-up (weights + KV cache), used or not.
            gpu=int(0.3 * 127_612_108 * 1024) - _gb(3.4),
            cpu=105.0,
        ),
    ),
    anon=_gb(3.5),
    file=_gb(1.6),
    shmem=_gb(1.0),
    activity="bursty",
    busy_util=91.0,
    uptime_s=2 * 3600.0 + 310,
    server="vllm",
    port=8000,
    models=("Qwen/Qwen3-8B",),
    gpu_memory_utilization=0.3,
)


def _training(creep: bool, ignores_sigterm: bool, gpu: float = 12.0, rss: float = 5.2) -> WorkloadSpec:
    return WorkloadSpec(
        key="train",
        name="ssd-tetris-train-1",
        image="ssd-tetris:cu128-torch2.8",
        project="ssd-tetris",
        service="train",
        procs=(
            ProcessSpec(
                "python3",
                "python3 train.py --config configs/ppo_large.yaml --batch-size 512 --replay-buffer 2000000",
                rss=_gb(rss),
                gpu=_gb(gpu),
                cpu=135.0,
                user="1000",
            ),
            ProcessSpec(
                "pt_data_worker",
                "python3 train.py (DataLoader worker 0)",
                rss=_gb(0.62),
                cpu=38.0,
                user="1000",
            ),
            ProcessSpec(
                "pt_data_worker",
                "python3 train.py (DataLoader worker 1)",
                rss=_gb(0.61),
                cpu=36.0,
                user="1000",
            ),
            ProcessSpec(
                "tensorboard",
                "/usr/bin/python3 /usr/local/bin/tensorboard --logdir runs --port 6006",
                rss=_gb(0.21),
                cpu=0.8,
                user="1000",
            ),
        ),
        anon=_gb(rss + 1.25),
        file=_gb(1.4),
        shmem=_gb(0.9),  # DataLoader batches travel through /dev/shm
        limit=32 * GIB,
        activity="steady",
        busy_util=95.0,
        uptime_s=2 * 3600.0 + 1_337,
        creep_gpu=1.3 * GB / 60.0 if creep else 0.0,
        creep_cpu=0.04 * GB / 60.0 if creep else 0.0,
        ignores_sigterm=ignores_sigterm,
    )


_OMNI = WorkloadSpec(
    key="omni",
    name="audio-lab-omni-1",
    image="audio-lab/omni:qwen2.5-omni-3b",
    project="audio-lab",
    service="omni",
    procs=(
        ProcessSpec(
            "python3",
            "python3 omni_server.py --model Qwen/Qwen2.5-Omni-3B --port 8010",
            rss=_gb(2.1),
            gpu=_gb(7.6),
            cpu=105.0,
        ),
    ),
    anon=_gb(2.0),
    file=_gb(0.9),
    limit=16 * GIB,
    activity="pipeline",
    busy_util=80.0,
    uptime_s=4 * 3600.0 + 77,
)

_CHATTERBOX = WorkloadSpec(
    key="chatterbox",
    name="audio-lab-chatterbox-1",
    image="audio-lab/chatterbox:0.1.4",
    project="audio-lab",
    service="chatterbox",
    procs=(
        ProcessSpec(
            "python3",
            "python3 -m chatterbox.server --port 8004 --device cuda",
            rss=_gb(1.55),
            gpu=_gb(4.05),
            cpu=100.0,
        ),
    ),
    anon=_gb(1.5),
    file=_gb(0.6),
    limit=8 * GIB,
    activity="pipeline",
    busy_util=70.0,
    uptime_s=4 * 3600.0 + 91,
)

_DEVSTRAL = WorkloadSpec(
    key="devstral",
    name="devstral",
    image="ghcr.io/ggml-org/llama.cpp:server-cuda",
    project="coder",
    service="devstral",
    procs=(
        ProcessSpec(
            "llama-server",
            "/app/llama-server -m /models/Devstral-Small-2-24B-Instruct-2512-BF16.gguf -ngl 99 -c 32768 "
            "--host 0.0.0.0 --port 8080 --flash-attn on",
            rss=_gb(1.1),
            gpu=_gb(48.3),
            cpu=101.0,
        ),
    ),
    anon=_gb(1.2),
    file=_gb(2.4),
    activity="bursty",
    busy_util=97.0,
    uptime_s=7 * 3600.0 + 402,
)


def _squeezed(w: WorkloadSpec, total_gb: float, rss_gb: float | None = None) -> WorkloadSpec:
    """The workload fitted into `total_gb` (GPU side + CPU working set), as the reference's footprints are
    totals; under memory pressure the kernel has also evicted most of its page cache."""
    procs = list(w.procs)
    anon = w.anon
    if rss_gb is not None:
        anon += _gb(rss_gb) - procs[0].rss
        procs[0] = replace(procs[0], rss=_gb(rss_gb))
    file = w.file // 4
    shmem = min(w.shmem, _gb(0.25))
    cpu_side = anon + shmem + file - int(file * 0.4) + 48 * MIB
    gpu_index = next(i for i, p in enumerate(procs) if p.gpu)
    others = sum(p.gpu for i, p in enumerate(procs) if i != gpu_index)
    procs[gpu_index] = replace(procs[gpu_index], gpu=_gb(total_gb) - cpu_side - others)
    return replace(w, procs=tuple(procs), anon=anon, file=file, shmem=shmem)


# The contention scenario: vLLM answering without a pause, and the training run that starts beside it.
CONTENTION_STARTS_S = 60.0
_VLLM_STEADY = replace(_VLLM, key="vllm-steady", activity="steady", busy_util=62.0)


@dataclass(frozen=True)
class Scenario:
    workloads: tuple[WorkloadSpec, ...]
    host_cache: int  # page cache that belongs to no container (reclaimable, so part of MemAvailable)
    kernel: int  # kernel, driver and page tables: used, yet nobody's (the "unattributed" share)
    desktop: bool = True  # a GNOME session holds a little GPU memory (Xorg, gnome-shell)
    # A discrete GPU (an H100) with memory of its own: GPU allocations do not come out of the host pool.
    discrete: bool = False


SCENARIOS: dict[str, Scenario] = {
    "default": Scenario(
        (_WHISPER, _F5, _OLLAMA_70B, _training(creep=True, ignores_sigterm=True)),
        host_cache=_gb(9.5),
        kernel=_gb(3.1),
    ),
    "audio": Scenario((_WHISPER, _OLLAMA_8B, _F5), host_cache=_gb(6.0), kernel=_gb(2.4)),
    "training": Scenario(
        (_training(creep=True, ignores_sigterm=False),), host_cache=_gb(7.0), kernel=_gb(2.6)
    ),
    "critical": Scenario(
        (
            _squeezed(_training(creep=False, ignores_sigterm=True), 19.2, rss_gb=3.2),
            _squeezed(_OMNI, 8.0),
            _squeezed(_CHATTERBOX, 4.0),
            _squeezed(_OLLAMA_70B, 40.5),
            _squeezed(_DEVSTRAL, 48.5),
        ),
        host_cache=_gb(1.2),
        kernel=_gb(3.4),
    ),
    "everything": Scenario(
        (
            _squeezed(_training(creep=False, ignores_sigterm=True), 12.0, rss_gb=3.2),
            _squeezed(_OMNI, 8.0),
            _squeezed(_CHATTERBOX, 4.0),
            _squeezed(_OLLAMA_70B, 40.0),
            _squeezed(_DEVSTRAL, 48.0),
        ),
        host_cache=_gb(2.5),
        kernel=_gb(3.3),
    ),
    "idle": Scenario((), host_cache=_gb(4.0), kernel=_gb(2.1)),
    "discrete": Scenario(
        (_WHISPER, _OLLAMA_8B, _F5, _training(creep=False, ignores_sigterm=False)),
        host_cache=_gb(8.0),
        kernel=_gb(2.2),
        discrete=True,
    ),
    "servers": Scenario((_WHISPER, _OLLAMA_MULTI, _VLLM), host_cache=_gb(12.0), kernel=_gb(2.8)),
    "contention": Scenario(
        (
            _VLLM_STEADY,
            replace(
                _training(creep=False, ignores_sigterm=False),
                uptime_s=-CONTENTION_STARTS_S,
                starts_after_s=CONTENTION_STARTS_S,
            ),
        ),
        host_cache=_gb(8.0),
        kernel=_gb(2.5),
    ),
}
assert set(SCENARIOS) == set(DEMO_SCENARIOS)

# name, cmdline, rss MB, CPU %, GPU MB (Xorg and gnome-shell draw through the GPU), user
# fmt: off
HOST_PROCESSES: tuple[tuple[str, str, int, float, int, str], ...] = (
    ("systemd", "/sbin/init splash", 14, 0.0, 0, "root"),
    ("systemd-journald", "/usr/lib/systemd/systemd-journald", 48, 0.1, 0, "root"),
    ("systemd-udevd", "/usr/lib/systemd/systemd-udevd", 11, 0.0, 0, "root"),
    ("systemd-resolved", "/usr/lib/systemd/systemd-resolved", 13, 0.0, 0, "systemd-resolve"),
    ("systemd-timesyncd", "/usr/lib/systemd/systemd-timesyncd", 7, 0.0, 0, "systemd-timesync"),
    ("nvidia-persistenced", "/usr/bin/nvidia-persistenced --user nvidia-persistenced", 4, 0.0, 0,
     "nvidia-persistenced"),
    ("dbus-daemon", "@dbus-daemon --system --address=systemd: --nofork --nopidfile --systemd-activation",
     6, 0.0, 0, "messagebus"),
    ("NetworkManager", "/usr/sbin/NetworkManager --no-daemon", 21, 0.1, 0, "root"),
    ("polkitd", "/usr/lib/polkit-1/polkitd --no-debug", 9, 0.0, 0, "polkitd"),
    ("rsyslogd", "/usr/sbin/rsyslogd -n -iNONE", 6, 0.0, 0, "syslog"),
    ("systemd-logind", "/usr/lib/systemd/systemd-logind", 9, 0.0, 0, "root"),
    ("udisksd", "/usr/libexec/udisks2/udisksd", 14, 0.0, 0, "root"),
    ("avahi-daemon", "avahi-daemon: running [spark-demo.local]", 4, 0.0, 0, "avahi"),
    ("cron", "/usr/sbin/cron -f -P", 3, 0.0, 0, "root"),
    ("snapd", "/usr/lib/snapd/snapd", 38, 0.1, 0, "root"),
    ("containerd", "/usr/bin/containerd", 52, 0.4, 0, "root"),
    ("dockerd", "/usr/bin/dockerd -H fd:// --containerd=/run/containerd/containerd.sock", 96, 0.5, 0, "root"),
    ("sshd", "sshd: /usr/sbin/sshd -D [listener] 0 of 10-100 startups", 9, 0.0, 0, "root"),
    ("gdm3", "/usr/sbin/gdm3", 8, 0.0, 0, "root"),
    ("Xorg", "/usr/lib/xorg/Xorg vt2 -displayfd 3 -auth /run/user/1000/gdm/Xauthority -nolisten tcp",
     118, 0.6, 84, "nvidia"),
    ("gnome-shell", "/usr/bin/gnome-shell", 342, 1.2, 176, "nvidia"),
    ("pipewire", "/usr/bin/pipewire", 12, 0.1, 0, "nvidia"),
    ("wireplumber", "/usr/bin/wireplumber", 17, 0.0, 0, "nvidia"),
    ("gnome-terminal-", "/usr/libexec/gnome-terminal-server", 61, 0.1, 0, "nvidia"),
    ("upowerd", "/usr/libexec/upowerd", 8, 0.0, 0, "root"),
    ("fwupd", "/usr/libexec/fwupd/fwupd", 41, 0.0, 0, "root"),
    ("packagekitd", "/usr/libexec/packagekitd", 24, 0.0, 0, "root"),
    ("dgx-dashboard", "/opt/nvidia/dgx-dashboard-service/dashboard-service serve", 64, 0.3, 0, "root"),
    ("code-server", "/usr/lib/code-server/lib/node /usr/lib/code-server --bind-addr 127.0.0.1:8443",
     212, 0.4, 0, "nvidia"),
    ("node", "/usr/lib/code-server/lib/node /usr/lib/code-server/out/node/entry.js (extension host)",
     486, 1.8, 0, "nvidia"),
    ("sshd", "sshd: nvidia@pts/0", 8, 0.0, 0, "nvidia"),
    ("bash", "-bash", 5, 0.0, 0, "nvidia"),
    ("tmux: server", "tmux new -s work", 6, 0.1, 0, "nvidia"),
    ("bash", "-bash", 5, 0.0, 0, "nvidia"),
    ("htop", "htop", 5, 0.4, 0, "nvidia"),
)
# fmt: on
