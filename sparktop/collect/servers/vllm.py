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

from sparktop.collect.servers.http import ServerError, get_json, get_text
from sparktop.collect.servers.prom import Metrics
from sparktop.collect.servers.reading import Reading
from sparktop.collect.servers.text import visible
from sparktop.model import ServedModel

SERVER = "vllm"
DEFAULT_PORT = 8000
PREFIX = "vllm:"

KV_USAGE = ("vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc")
RUNNING = ("vllm:num_requests_running",)
WAITING = ("vllm:num_requests_waiting",)
PROMPT = ("vllm:prompt_tokens_total",)
GENERATION = ("vllm:generation_tokens_total",)
CACHE_INFO = ("vllm:cache_config_info",)


def _number(value: str | None) -> float | None:
    try:
        return float(value) if value not in (None, "", "None") else None
    except ValueError:
        return None


def parse_metrics(text: str, context: dict[str, int] | None = None) -> tuple[list[ServedModel], list[str]]:
    metrics = Metrics(text)
    if not any(name.startswith(PREFIX) for name in metrics.names()):
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
    if not names:
        names = [""]  # a server whose series carry no model_name still is one model
    models = []
    for name in names:
        cache = info.get(name) or info.get("") or {}
        blocks, block_size = _number(cache.get("num_gpu_blocks")), _number(cache.get("block_size"))
        usage = kv.get(name)
        models.append(
            ServedModel(
                name=visible(name) or "(unnamed)",
                requests_running=int(sum(running[name])) if name in running else None,
                requests_waiting=int(sum(waiting[name])) if name in waiting else None,
                kv_cache_usage=sum(usage) / len(usage) if usage else None,
                kv_cache_tokens=int(blocks * block_size) if blocks and block_size else None,
                prompt_tokens_total=sum(prompt[name]) if name in prompt else None,
                generation_tokens_total=sum(generation[name]) if name in generation else None,
                gpu_memory_utilization=_number(cache.get("gpu_memory_utilization")),
                context_length=(context or {}).get(name),
            )
        )
    return models, metrics.used


def parse_model_list(data: Any) -> dict[str, int]:
    """`/v1/models` → model id → max_model_len (the context the server was started with)."""
    out: dict[str, int] = {}
    for entry in data.get("data", []) if isinstance(data, dict) else []:
        if isinstance(entry, dict) and isinstance(entry.get("id"), str):
            length = entry.get("max_model_len")
            if isinstance(length, int) and length > 0:
                out[entry["id"]] = length
    return out


def read(base: str, timeout: float, want_version: bool = True) -> Reading:
    text = get_text(f"{base}/metrics", timeout)
    context: dict[str, int] = {}
    version = None
    if want_version:  # start-up facts: asked once per server, not every probe
        with contextlib.suppress(ServerError):
            context = parse_model_list(get_json(f"{base}/v1/models", timeout))
        try:
            answer = get_json(f"{base}/version", timeout)
            if isinstance(answer, dict) and isinstance(answer.get("version"), str):
                version = visible(answer["version"], 40)
        except ServerError:
            pass
    models, fields = parse_metrics(text, context)
    return Reading(SERVER, version=version, models=models, fields=fields)
