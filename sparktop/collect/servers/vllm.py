"""vLLM: `GET /metrics` (Prometheus text), `GET /version` and `GET /v1/models` (max_model_len).

Names used (0.9+ V1 engine; older names asked for too): `vllm:kv_cache_usage_perc` (0–1; before it
`vllm:gpu_cache_usage_perc`), `vllm:num_requests_running` / `_waiting`, `vllm:prompt_tokens_total`,
`vllm:generation_tokens_total`, and `vllm:cache_config_info`, an info gauge whose labels carry the cache
config (`num_gpu_blocks`, `block_size`, `gpu_memory_utilization`). Series carry `model_name` (and `engine`
for data-parallel engines, which are summed). The reservation vLLM takes at start-up is
gpu_memory_utilization × device memory; the collector fills it in, since only the machine knows its size.
"""

from __future__ import annotations

import contextlib
from typing import Any

from sparktop.collect.servers.probe import ServerError, get_json, get_text, get_version
from sparktop.collect.servers.prom import Metrics
from sparktop.collect.servers.reading import MAX_MODELS, Reading
from sparktop.collect.servers.server_text import visible
from sparktop.collect.servers.values import Checked
from sparktop.core.server_kinds import VLLM
from sparktop.core.snapshot import ServedModel

KIND = VLLM

KV_USAGE = ("vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc")
RUNNING = ("vllm:num_requests_running",)
WAITING = ("vllm:num_requests_waiting",)
PROMPT = ("vllm:prompt_tokens_total",)
GENERATION = ("vllm:generation_tokens_total",)
CACHE_INFO = ("vllm:cache_config_info",)


WANTED = (*KV_USAGE, *RUNNING, *WAITING, *PROMPT, *GENERATION, *CACHE_INFO)


def parse_metrics(
    text: str, context: dict[str, int] | None = None
) -> tuple[list[ServedModel], list[str], str | None, int]:
    """(models — at most MAX_MODELS —, metric names used, a note on figures refused, models past the cap)."""
    metrics = Metrics(text, KIND.metric_prefix, WANTED)
    if not metrics.prefixed:
        raise ServerError("/metrics has no vllm: metrics")
    running = metrics.by_label("model_name", *RUNNING)
    waiting = metrics.by_label("model_name", *WAITING)
    kv = metrics.by_label("model_name", *KV_USAGE)
    prompt = metrics.by_label("model_name", *PROMPT)
    generation = metrics.by_label("model_name", *GENERATION)
    info_hit = metrics.series(*CACHE_INFO)
    info: dict[str, dict[str, str]] = {}
    for labels, _ in info_hit[1] if info_hit else []:
        info.setdefault(labels.get("model_name", ""), labels)
    names = [n for n in dict.fromkeys([*running, *waiting, *kv, *prompt, *generation]) if n]
    more = max(0, len(names) - MAX_MODELS) + metrics.unlisted("model_name", set(names))
    names = names[:MAX_MODELS] or [""]  # a server whose series carry no model_name still is one model
    check = Checked()
    models = []
    for name in names:
        shown = visible(name) or "(unnamed)"
        cache = info.get(name) or info.get("") or {}
        blocks = check.count(cache.get("num_gpu_blocks"), f"{shown} num_gpu_blocks")
        block_size = check.count(cache.get("block_size"), f"{shown} block_size")
        usage = kv.get(name)
        models.append(
            ServedModel(
                name=shown,
                **check.request_counters(shown, name, running, waiting, prompt, generation),
                kv_cache_usage=check.fraction(sum(usage) / len(usage), f"{shown} KV-cache use")
                if usage
                else None,
                kv_cache_tokens=check.tokens(blocks * block_size, f"{shown} KV-cache tokens")
                if blocks and block_size
                else None,
                gpu_memory_utilization=check.fraction(
                    cache.get("gpu_memory_utilization"), f"{shown} gpu_memory_utilization", positive=True
                ),
                context_length=(context or {}).get(name),
            )
        )
    return models, metrics.used, check.note(), more


def parse_model_list(data: Any) -> dict[str, int]:
    """`/v1/models` → model id → max_model_len (the context the server was started with)."""
    out: dict[str, int] = {}
    entries = data.get("data", []) if isinstance(data, dict) else []
    for entry in entries[:MAX_MODELS] if isinstance(entries, list) else []:
        if isinstance(entry, dict) and isinstance(entry.get("id"), str):
            length = Checked().tokens(entry.get("max_model_len"), "max_model_len")
            if length is not None:
                out[entry["id"]] = length
    return out


def read(base: str, timeout: float, want_version: bool = True) -> Reading:
    text = get_text(f"{base}/metrics", timeout)
    context: dict[str, int] = {}
    version = None
    if want_version:  # start-up facts: asked once per server, not every probe
        with contextlib.suppress(ServerError):
            context = parse_model_list(get_json(f"{base}/v1/models", timeout))
        version = get_version(f"{base}/version", timeout)
    models, fields, note, more = parse_metrics(text, context)
    return Reading(KIND.name, version=version, models=models, fields=fields, note=note, more_models=more)
