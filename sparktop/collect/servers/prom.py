"""Prometheus text from a server's /metrics, parsed by prometheus_client's parser (never by hand), with the
parse work bounded: only the sample names asked for reach the parser, at most MAX_SERIES lines of each.

A server can fill its /metrics (4 MiB, the body cap) with ~85,000 series of one name; parsing all of them
took ~5 s of CPU every probe, and keeping them ~800 MB. Lines of other names are skipped with a prefix test;
lines past the cap are kept as text only to count the models they name (`unlisted`).
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Iterable

from sparktop.collect.servers.probe import ServerError

Series = list[tuple[dict[str, str], float]]

# Series of one name any real server gives: its models × data-parallel engines (vLLM serves one model).
MAX_SERIES = 256
# A sample line: its metric name, then the rest of the line. Comments (#) and blank lines do not match.
_SAMPLE = re.compile(r"^[ \t]*([a-zA-Z_:][a-zA-Z0-9_:]*)[^\n]*", re.MULTILINE)
# The label that names a model in a line past the cap (vLLM and SGLang: model_name; early SGLang: name).
_MODEL_LABEL = re.compile(r'[{,]\s*(model_name|name)\s*=\s*"((?:[^"\\\n]|\\.)*)"')


class Metrics:
    """Samples by sample name (`vllm:prompt_tokens_total`, not the family name), each with its labels.
    `prefixed`: some metric name starts with `prefix` (the server is of that kind)."""

    def __init__(self, text: str, prefix: str, wanted: Iterable[str]) -> None:
        wanted = set(wanted)
        self.prefixed = False
        self.samples: dict[str, Series] = defaultdict(list)
        # label → the model names that lines past MAX_SERIES carry (counted, never parsed)
        self._past_cap: dict[str, set[str]] = defaultdict(set)
        kept: list[str] = []
        counts: dict[str, int] = defaultdict(int)
        # One match at a time over the text: no list of its lines, no copy of it (a 4 MiB page is ~85,000).
        for line in _SAMPLE.finditer(text):
            name = line.group(1)
            if not self.prefixed and name.startswith(prefix):
                self.prefixed = True
            if name not in wanted:
                continue
            if counts[name] < MAX_SERIES:
                counts[name] += 1
                kept.append(line.group() + "\n")
            else:
                found = _MODEL_LABEL.search(text, line.start(), line.end())
                if found:
                    self._past_cap[found.group(1)].add(found.group(2))
        # Imported when a server's /metrics is read: the package (its exposition and HTTP server too) is
        # ~1.4 MiB and ~0.03 s that a dashboard without such a server never needs.
        from prometheus_client.parser import text_string_to_metric_families

        try:
            for family in text_string_to_metric_families("".join(kept)):
                for sample in family.samples:
                    if not math.isnan(sample.value):
                        self.samples[sample.name].append((dict(sample.labels), sample.value))
        except (ValueError, TypeError, IndexError) as exc:
            raise ServerError(f"/metrics is not Prometheus text ({' '.join(str(exc).split())[:80]})") from exc
        self.used: list[str] = []  # names that gave a value, in the order asked

    def names(self) -> set[str]:
        return set(self.samples)

    def has_label(self, label: str) -> bool:
        return any(label in labels for series in self.samples.values() for labels, _ in series)

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

    def unlisted(self, label: str, listed: set[str]) -> int:
        """How many more `label` values the lines past MAX_SERIES name (models not parsed, only counted)."""
        unescaped = (
            v.replace('\\"', '"').replace("\\n", "\n").replace("\\\\", "\\") for v in self._past_cap[label]
        )
        return len({v for v in unescaped if v not in listed})
