"""tests/fixtures/demo_session.py hands out the data a dashboard on the demo shows first, without the
dashboard: the frame-reading tests that use it check what make_app's app would draw only if it is so."""

from __future__ import annotations

from tests.fixtures.demo_session import demo_session
from tests.ui.demo_app import SEVEN_MINUTES, make_app


async def test_a_demo_session_holds_what_the_demo_app_shows_first_and_next() -> None:
    app = make_app("training", warmup=SEVEN_MINUTES)
    async with app.run_test(size=(80, 24)):
        run = demo_session("training", SEVEN_MINUTES)
        shown = app.session
        assert run.session.latest == shown.latest
        assert run.session.creep == shown.creep and run.session.creep, "the seven-minute training run creeps"
        assert run.session.forecast == shown.forecast
        assert run.session.assessment == shown.assessment
        await app.refresh_once()
        assert run.sample() == shown.latest
    other = demo_session("training", SEVEN_MINUTES)
    assert other.session.latest == demo_session("training", SEVEN_MINUTES).session.latest
    assert other.sample() == run.session.latest, "each copy is its own: the first copy's sample took none"
