"""Every alert raised and cleared goes to the session's messages with its time (issue 32 item 3: after 12 min
of creep alerts, exhaustion banners and a SIGTERM the messages screen read "Messages (0)")."""

from __future__ import annotations

from sparktop.session.message_log import MessageLog
from sparktop.session.session import Session
from tests.fixtures.hogs import LEAK_STOPS_S, START, leaking_machine


def test_alerts_raised_and_cleared_and_problems_are_messages_with_their_time() -> None:
    source, session = leaking_machine(), Session()
    for _ in range(150):
        session.ingest(source.sample())
    said = [(m.at - START, m.title, m.text) for m in session.messages]
    titles = [title for _at, title, _text in said]
    assert titles == ["creep", "exhaustion", "problem", "creep over", "exhaustion over"], said
    (creep_at, _, creep), (banner_at, _, banner) = said[0], said[1]
    assert creep.startswith("leak (5000) +3.0 GiB/min") and banner.startswith("▲ pool exhausted in ~")
    assert creep_at == banner_at and 5 <= creep_at <= 30  # raised together, within seconds of the start
    assert said[2] == (50.0, "problem", "docker: permission denied")  # once, not each sample it lasts
    for at, title, _text in said[3:]:  # both cleared within seconds of the stop, each saying what cleared
        assert LEAK_STOPS_S < at <= LEAK_STOPS_S + 10, (title, at)
    assert said[3][2] == "leak (5000) no longer creeps"
    assert said[4][2].startswith("no exhaustion in sight")


def test_stale_data_and_the_end_are_messages() -> None:
    session = Session(clock=lambda: START + 500)
    session.ingest(leaking_machine().sample())
    session.fail("OSError: /proc unreadable")
    session.fail("OSError: /proc unreadable")  # the same reason again: said once
    session.end("end of recording")
    said = [(m.title, m.text) for m in session.messages]
    assert said[0] == ("stale", "OSError: /proc unreadable")
    assert said[1][0] == "end" and said[1][1].startswith("end of recording") and len(said) == 2


def test_the_messages_are_bounded_and_count_what_went() -> None:
    log = MessageLog(limit=3)
    for i in range(5):
        log.add(START + i, "creep", f"alert {i}")
    assert [m.text for m in log] == ["alert 2", "alert 3", "alert 4"] and log.dropped == 2
    assert log.add(START, "problem", "a\x1b[31mred").text == "a^[[31mred"  # plain text, controls shown
