"""Fixtures for the dashboard tests: see demo_app.py for the deterministic app."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import pytest_asyncio
from textual.pilot import Pilot

from sparktop.ui.app import SparktopApp
from sparktop.ui.whatif import WhatIfPane
from tests.ui.demo_app import make_app, reset_whatif


@pytest.fixture
def app_factory() -> Callable[..., SparktopApp]:
    return make_app


@pytest_asyncio.fixture(loop_scope="module")
async def whatif(whatif_app: tuple[SparktopApp, Pilot, WhatIfPane]) -> tuple[SparktopApp, Pilot, WhatIfPane]:
    """The module's shared What-if tab (`whatif_app = shared_whatif()` in the module), reset for this test."""
    await reset_whatif(*whatif_app)
    return whatif_app
