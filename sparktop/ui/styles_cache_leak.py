"""The one place sparktop reaches into a private Textual module: to let go of widgets Textual keeps.

Why: Textual's `StylesCache.get_inner_outer` is an instance method under `functools.lru_cache(1024)` (Textual
issue #6665, open in 8.2.8), so the cache's keys keep up to 1,024 `StylesCache` objects alive, each with the
rendered lines (`Strip`s and their own caches) of a widget that may be long gone: every footer key rebuilt on
a tab switch, every closed dialog. In `bench/bench_soak.py` (300 tab switches, demo, 120×36) RSS grew 14 %
over the warm-up figure with the cache left alone and 6 % with it cleared once a second; in the test suite a
worker held ~200,000 dead Textual caches after 16 what-if tests.

How: `release_retained_styles()` empties that cache; the dashboard calls it once a tick, the cluster view
once a fetch, and both when they exit (test runs and library users end apps: a worker's heap of dead caches
made every full garbage collection slow). What is lost is one sum of two colours per widget drawn next,
recomputed on demand. `tests/ui/test_textual_private_api.py` fails when the installed Textual no longer has
the cache (renamed, or fixed upstream: then this module can go).
"""

from __future__ import annotations

from textual._styles_cache import StylesCache

# The private name this module relies on, checked by tests/ui/test_textual_private_api.py.
PRIVATE_MODULE = "textual._styles_cache"
LEAKY_CACHE = "StylesCache.get_inner_outer"


def release_retained_styles() -> None:
    """Forget what `StylesCache.get_inner_outer` remembers (and the dead widgets' lines its keys hold)."""
    StylesCache.get_inner_outer.cache_clear()
