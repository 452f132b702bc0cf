"""Prometheus text from a server's /metrics, parsed by prometheus_client's parser (never by hand)."""

from __future__ import annotations

import math
from collections import defaultdict

from prometheus_client.parser import text_string_to_metric_families

from sparktop.collect.servers.http import ServerError

Series = list[tuple[dict[str, str], float]]


class Metrics:
    """Samples by sample name (`vllm:prompt_tokens_total`, not the family name), each with its labels."""

    def __init__(self, text: str) -> None:
        self.samples: dict[str, Series] = defaultdict(list)
        try:
            for family in text_string_to_metric_families(text):
                for sample in family.samples:
                    if not math.isnan(sample.value):
                        self.samples[sample.name].append((dict(sample.labels), sample.value))
        except (ValueError, TypeError, IndexError) as exc:
            raise ServerError(f"/metrics is not Prometheus text ({' '.join(str(exc).split())[:80]})") from exc
        self.used: list[str] = []  # names that gave a value, in the order asked

    def names(self) -> set[str]:
        return set(self.samples)

    def series(self, *names: str) -> tuple[str, Series] | None:
        """The first of `names` present (a metric renamed between versions is asked for by all its names)."""
        for name in names:
            found = self.samples.get(name)
            if found:
                if name not in self.used:
                    self.used.append(name)
                return name, found
        return None

    def by_label(self, label: str, *names: str) -> dict[str, list[float]]:
        """Values of the first present metric grouped by one label's value ("" when the label is absent)."""
        hit = self.series(*names)
        out: dict[str, list[float]] = defaultdict(list)
        if hit is not None:
            for labels, value in hit[1]:
                out[labels.get(label, "")].append(value)
        return out

    def total(self, *names: str) -> float | None:
        hit = self.series(*names)
        return None if hit is None else sum(v for _, v in hit[1])
