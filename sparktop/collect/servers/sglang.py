"""SGLang (`--enable-metrics`): `GET /metrics` and `GET /get_server_info` (its `version`).

Names: `sglang:token_usage` (0–1 of the KV pool), `sglang:num_running_reqs`, `sglang:num_queue_reqs`,
`sglang:prompt_tokens_total`, `sglang:generation_tokens_total`, `sglang:max_total_num_tokens`. Series carry
`model_name` (early releases: `name`).
"""

from __future__ import annotations

from sparktop.collect.servers.http import ServerError, get_json, get_text
from sparktop.collect.servers.prom import Metrics
from sparktop.collect.servers.reading import Reading
from sparktop.collect.servers.text import visible
from sparktop.model import ServedModel

SERVER = "sglang"
DEFAULT_PORT = 30000
PREFIX = "sglang:"


def parse_metrics(text: str) -> tuple[list[ServedModel], list[str]]:
    metrics = Metrics(text)
    sglang_names = [n for n in metrics.names() if n.startswith(PREFIX)]
    if not sglang_names:
        raise ServerError("/metrics has no sglang: metrics")
    label = "model_name"
    if not any("model_name" in labels for n in sglang_names for labels, _ in metrics.samples[n]):
        label = "name"
    usage = metrics.by_label(label, "sglang:token_usage")
    running = metrics.by_label(label, "sglang:num_running_reqs")
    waiting = metrics.by_label(label, "sglang:num_queue_reqs")
    prompt = metrics.by_label(label, "sglang:prompt_tokens_total")
    generation = metrics.by_label(label, "sglang:generation_tokens_total")
    capacity = metrics.by_label(label, "sglang:max_total_num_tokens")
    names = [n for n in dict.fromkeys([*usage, *running, *waiting, *prompt, *generation]) if n] or [""]
    models = [
        ServedModel(
            name=visible(name) or "(unnamed)",
            kv_cache_usage=max(usage[name]) if name in usage else None,
            requests_running=int(sum(running[name])) if name in running else None,
            requests_waiting=int(sum(waiting[name])) if name in waiting else None,
            prompt_tokens_total=sum(prompt[name]) if name in prompt else None,
            generation_tokens_total=sum(generation[name]) if name in generation else None,
            kv_cache_tokens=int(max(capacity[name])) if name in capacity else None,
        )
        for name in names
    ]
    return models, metrics.used


def read(base: str, timeout: float, want_version: bool = True) -> Reading:
    models, fields = parse_metrics(get_text(f"{base}/metrics", timeout))
    version = None
    if want_version:
        try:
            info = get_json(f"{base}/get_server_info", timeout)
            if isinstance(info, dict) and isinstance(info.get("version"), str):
                version = visible(info["version"], 40)
        except ServerError:
            pass
    return Reading(SERVER, version=version, models=models, fields=fields)
