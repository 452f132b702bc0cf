"""`sparktop web`'s page, fetched from the real server with a real HTTP client: it must work offline.

textual-serve's own page loads its font from fonts.googleapis.com; sparktop serves its own copy of the page
(sparktop/web/app_index.html) that loads the font textual-serve ships, from the same server.
"""

from __future__ import annotations

import re
from urllib.parse import urljoin, urlsplit

import pytest

from tests.fixtures.exporters import get
from tests.fixtures.web import shared_web


@pytest.fixture
def page_url(request: pytest.FixtureRequest) -> str:
    return shared_web(request).url  # the page only: the worker's shared web serves it


def test_the_page_fetches_nothing_from_another_host(page_url: str) -> None:
    status, _, body = get(page_url)
    assert status == 200
    html = body.decode()
    # Every address the page loads: src, href, CSS url(...); a namespace (xmlns) is not fetched.
    loaded = re.findall(r"""(?:src|href)\s*=\s*["']([^"']+)["']|url\(\s*["']?([^"')]+)""", html)
    addresses = [a or b for a, b in loaded]
    assert addresses, html[:500]
    here = urlsplit(page_url).netloc
    outside = [a for a in addresses if urlsplit(urljoin(page_url, a)).netloc != here]
    assert not outside, outside
    assert "googleapis" not in html


def test_the_font_the_page_names_is_served(page_url: str) -> None:
    html = get(page_url)[2].decode()
    fonts = re.findall(r"""url\(\s*["']?([^"')]+\.ttf)""", html)
    assert fonts
    for font in fonts:
        status, _, data = get(urljoin(page_url, font))
        assert status == 200 and len(data) > 10_000, font
