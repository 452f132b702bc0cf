"""llama.cpp's llama-server: `GET /metrics` (only with `--metrics`), `GET /slots`, `GET /props`.

/metrics gives `llamacpp:prompt_tokens_total`, `llamacpp:tokens_predicted_total`,
`llamacpp:requests_processing`, `llamacpp:requests_deferred` (and, in builds before ~b5000,
`llamacpp:kv_cache_usage_ratio` / `llamacpp:kv_cache_tokens`). /props gives `model_path`, `model_alias`,
`total_slots`, `default_generation_settings.n_ctx` and `build_info`; /slots one entry per slot with
`n_ctx` and `is_processing`. Without --metrics the server answers 501 and the model is still shown.
"""

from __future__ import annotations

from pathlib import PurePath
from typing import Any

from sparktop.collect.servers.probe import ServerError, get_json, get_text
from sparktop.collect.servers.prom import Metrics
from sparktop.collect.servers.reading import Reading, join_notes
from sparktop.collect.servers.server_text import visible
from sparktop.collect.servers.values import Checked
from sparktop.core.server_kinds import LLAMA_CPP
from sparktop.core.snapshot import ServedModel

KIND = LLAMA_CPP


def parse_props(data: Any) -> tuple[str | None, int | None, str | None]:
    """(model name, context per slot, build) from /props; ServerError when it is not llama-server's."""
    if not isinstance(data, dict) or not ("model_path" in data or "default_generation_settings" in data):
        raise ServerError("/props is not llama-server's")
    name = data.get("model_alias") or None
    path = data.get("model_path")
    if not name and isinstance(path, str) and path:
        name = PurePath(path).name
    settings = data.get("default_generation_settings")
    n_ctx = settings.get("n_ctx") if isinstance(settings, dict) else None
    build = data.get("build_info")
    return (
        visible(name) if isinstance(name, str) else None,
        Checked().tokens(n_ctx, "n_ctx") if isinstance(n_ctx, int) and n_ctx > 0 else None,
        visible(build, 40) if isinstance(build, str) and build else None,
    )


def recognises(answer: Any) -> bool:
    """Whether an answer of `GET /props` (KIND.probe_path) is llama-server's."""
    try:
        parse_props(answer)
    except ServerError:
        return False
    return True


def parse_slots(data: Any) -> tuple[int, int, int | None]:
    """(slots, slots processing, total context across slots) from /slots."""
    if not isinstance(data, list):
        raise ServerError("/slots is not a list")
    slots = [s for s in data if isinstance(s, dict)]
    busy = sum(1 for s in slots if s.get("is_processing") or s.get("state") not in (None, 0))
    contexts = [s["n_ctx"] for s in slots if isinstance(s.get("n_ctx"), int) and s["n_ctx"] > 0]
    return len(slots), busy, Checked().tokens(sum(contexts), "n_ctx of the slots") if contexts else None


WANTED = (
    "llamacpp:requests_processing",
    "llamacpp:requests_deferred",
    "llamacpp:prompt_tokens_total",
    "llamacpp:tokens_predicted_total",
    "llamacpp:kv_cache_usage_ratio",
)


def parse_metrics(text: str) -> tuple[dict[str, float | None], list[str]]:
    metrics = Metrics(text, KIND.metric_prefix, WANTED)
    if not metrics.prefixed:
        raise ServerError("/metrics has no llamacpp: metrics")
    values = {
        "running": metrics.total("llamacpp:requests_processing"),
        "waiting": metrics.total("llamacpp:requests_deferred"),
        "prompt": metrics.total("llamacpp:prompt_tokens_total"),
        "generation": metrics.total("llamacpp:tokens_predicted_total"),
        "kv_usage": metrics.total("llamacpp:kv_cache_usage_ratio"),
    }
    return values, metrics.used


def read(base: str, timeout: float, want_version: bool = True) -> Reading:
    name, n_ctx, build = parse_props(get_json(f"{base}/props", timeout))
    fields: list[str] = ["props"]
    note = None
    values: dict[str, float | None] = {}
    try:
        values, used = parse_metrics(get_text(f"{base}/metrics", timeout))
        fields += used
    except ServerError as exc:
        note = f"no metrics ({exc}): start llama-server with --metrics"
    busy = None
    try:
        _, busy, total_ctx = parse_slots(get_json(f"{base}/slots", timeout))
        fields.append("slots")
        n_ctx = total_ctx or n_ctx
    except ServerError:
        pass  # /slots is off with --no-slots
    check = Checked()
    running = check.count(values.get("running"), "requests processing")
    model = ServedModel(
        name=name or "(unnamed)",
        context_length=n_ctx,
        requests_running=running if running is not None else busy,
        requests_waiting=check.count(values.get("waiting"), "requests deferred"),
        prompt_tokens_total=check.counter(values.get("prompt"), "prompt tokens"),
        generation_tokens_total=check.counter(values.get("generation"), "predicted tokens"),
        kv_cache_usage=check.fraction(values.get("kv_usage"), "KV-cache use"),
    )
    return Reading(
        KIND.name, version=build, models=[model], fields=fields, note=join_notes(note, check.note())
    )
