"""SGLang (`--enable-metrics`): `GET /metrics` and `GET /get_server_info` (its `version`).

Names: `sglang:token_usage` (0–1 of the KV pool), `sglang:num_running_reqs`, `sglang:num_queue_reqs`,
`sglang:prompt_tokens_total`, `sglang:generation_tokens_total`, `sglang:max_total_num_tokens`. Series carry
`model_name` (early releases: `name`).
"""

from __future__ import annotations

from sparktop.collect.servers.probe import ServerError, get_text, get_version
from sparktop.collect.servers.prom import Metrics
from sparktop.collect.servers.reading import MAX_MODELS, Reading
from sparktop.collect.servers.server_text import visible
from sparktop.collect.servers.values import Checked, of_model
from sparktop.core.server_kinds import SGLANG
from sparktop.core.snapshot import ServedModel

KIND = SGLANG


USAGE = "sglang:token_usage"
RUNNING = "sglang:num_running_reqs"
WAITING = "sglang:num_queue_reqs"
PROMPT = "sglang:prompt_tokens_total"
GENERATION = "sglang:generation_tokens_total"
CAPACITY = "sglang:max_total_num_tokens"
WANTED = (USAGE, RUNNING, WAITING, PROMPT, GENERATION, CAPACITY)


def parse_metrics(text: str) -> tuple[list[ServedModel], list[str], str | None, int]:
    """(models — at most MAX_MODELS —, metric names used, a note on figures refused, models past the cap)."""
    metrics = Metrics(text, KIND.metric_prefix, WANTED)
    if not metrics.prefixed:
        raise ServerError("/metrics has no sglang: metrics")
    label = "model_name" if metrics.has_label("model_name") else "name"
    usage = metrics.by_label(label, USAGE)
    running = metrics.by_label(label, RUNNING)
    waiting = metrics.by_label(label, WAITING)
    prompt = metrics.by_label(label, PROMPT)
    generation = metrics.by_label(label, GENERATION)
    capacity = metrics.by_label(label, CAPACITY)
    names = [n for n in dict.fromkeys([*usage, *running, *waiting, *prompt, *generation]) if n]
    more = max(0, len(names) - MAX_MODELS) + metrics.unlisted(label, set(names))
    check = Checked()
    models = []
    for name in names[:MAX_MODELS] or [""]:
        shown = visible(name) or "(unnamed)"
        models.append(
            ServedModel(
                name=shown,
                kv_cache_usage=check.fraction(of_model(usage, name, max), f"{shown} token usage"),
                **check.request_counters(shown, name, running, waiting, prompt, generation),
                kv_cache_tokens=check.tokens(of_model(capacity, name, max), f"{shown} KV-cache tokens"),
            )
        )
    return models, metrics.used, check.note(), more


def read(base: str, timeout: float, want_version: bool = True) -> Reading:
    models, fields, note, more = parse_metrics(get_text(f"{base}/metrics", timeout))
    version = get_version(f"{base}/get_server_info", timeout) if want_version else None
    return Reading(KIND.name, version=version, models=models, fields=fields, note=note, more_models=more)
