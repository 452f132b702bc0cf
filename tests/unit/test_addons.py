"""The add-on collector seam in the live source: reports land in Snapshot.services, a failing or missing
collector is one line in Snapshot.errors and the others still run; a model server read over real HTTP."""

from __future__ import annotations

import json
import time
from pathlib import Path

from sparktop.collect.registry import AddOn, AddOns
from sparktop.collect.servers.collector import ServersCollector
from sparktop.core.snapshot import ServiceReport, Snapshot
from sparktop.sources.live import LiveSource
from tests.fixtures.snapshots import snapshot
from tests.fixtures.sources import NoDocker

DATA = Path(__file__).resolve().parents[1] / "data" / "servers"


class _Fine:
    name = "fine"

    def collect(self, snapshot):
        return [ServiceReport(collector="fine", endpoint="x")]

    def close(self):
        pass


class _Broken:
    name = "broken"

    def collect(self, snapshot):
        raise RuntimeError("the server\nsaid no")

    def close(self):
        raise OSError("and closing fails too")


def _snapshot() -> Snapshot:
    return snapshot(t=0, total=1, available=1, free=1)


def test_a_broken_collector_is_one_line_and_the_others_run():
    add_ons = AddOns([_Broken(), _Fine()])
    snap = _snapshot()
    add_ons.collect(snap)
    assert [r.collector for r in snap.services] == ["fine"]
    assert snap.errors == ["broken: the server said no"]
    add_ons.close()  # a collector failing to close does not raise


def test_an_add_on_that_cannot_be_imported_is_reported_once_per_tick():
    add_ons = AddOns(add_ons=[AddOn("ghost", "sparktop.no_such_module:Nope")])
    snap = _snapshot()
    add_ons.collect(snap)
    add_ons.collect(snap)
    assert len(snap.errors) == 1 and snap.errors[0].startswith("ghost collector unavailable:")


def test_live_source_carries_a_model_server_read_over_http(httpserver):
    httpserver.expect_request("/api/ps").respond_with_json(
        json.loads((DATA / "ollama-0.12-ps.json").read_text())
    )
    url = httpserver.url_for("/").rstrip("/")
    collector = ServersCollector(endpoints=[{"url": url, "server": "ollama"}], defaults=False, interval=0.1)
    source = LiveSource(docker=NoDocker(), collectors=[collector])
    try:
        deadline = time.monotonic() + 5
        snap = source.sample()
        while not snap.services and time.monotonic() < deadline:
            time.sleep(0.05)
            snap = source.sample()
        (report,) = snap.services
        assert [m.name for m in report.models] == ["llama3.1:70b", "qwen2.5-coder:7b"]
    finally:
        source.close()


def _configured_ollama(httpserver, tmp_path: Path) -> tuple[str, Path]:
    """An Ollama 0.12 on a port nothing finds without configuration, and a config file listing it."""
    httpserver.expect_request("/api/ps").respond_with_json(
        json.loads((DATA / "ollama-0.12-ps.json").read_text())
    )
    httpserver.expect_request("/api/version").respond_with_json({"version": "0.12.6"})
    url = httpserver.url_for("/").rstrip("/")
    path = tmp_path / "config.toml"
    path.write_text(f'[[servers]]\nurl = "{url}"\nkind = "ollama"\n')
    return url, path


def test_a_server_from_the_config_file_is_probed_by_the_live_source(httpserver, tmp_path):
    """`[[servers]]` in config.toml → the settings and the source the dashboard opens (as `sparktop
    --config FILE` does) → the registry's servers collector → the server's models in Snapshot.services."""
    from sparktop.commands.common import settings_from
    from sparktop.commands.main import build_parser
    from sparktop.sources.factory import open_source

    url, path = _configured_ollama(httpserver, tmp_path)
    argv = ["--config", str(path)]
    opts = build_parser(argv).parse_args(argv)
    config, problems = settings_from(opts)
    assert problems == []
    source = open_source(demo=opts.demo, replay=opts.replay, seed=opts.seed, config=config)
    try:
        deadline = time.monotonic() + 10
        mine: list[ServiceReport] = []
        while not mine and time.monotonic() < deadline:
            mine = [r for r in source.sample().services if r.endpoint == url]
            time.sleep(0.05)
        (report,) = mine
        assert report.server == "ollama" and report.version == "0.12.6" and report.error is None
        assert [m.name for m in report.models] == ["llama3.1:70b", "qwen2.5-coder:7b"]
    finally:
        source.close()


def test_a_configured_server_without_kind_is_identified_by_what_it_answers(httpserver):
    from sparktop.collect.registry import ADD_ONS
    from sparktop.settings.config import Config

    httpserver.expect_request("/metrics").respond_with_data("", status=404)
    httpserver.expect_request("/api/ps").respond_with_json(
        json.loads((DATA / "ollama-0.12-ps.json").read_text())
    )
    url = httpserver.url_for("/").rstrip("/")
    config = Config.model_validate({"servers": [{"url": url}]})
    servers = [a for a in ADD_ONS if a.name == "servers"]
    add_ons = AddOns(add_ons=servers, config=config)
    try:
        deadline = time.monotonic() + 10
        mine: list[ServiceReport] = []
        while not mine and time.monotonic() < deadline:
            snap = _snapshot()
            add_ons.collect(snap)
            mine = [r for r in snap.services if r.endpoint == url]
            time.sleep(0.05)
        assert [r.server for r in mine] == ["ollama"]
    finally:
        add_ons.close()


def test_once_waits_for_a_model_server_to_answer_and_prints_its_models(httpserver, tmp_path, capsys):
    """`sparktop --once --json` samples once: the servers are read in the background, so without a bounded
    wait for their first answer it printed no model server at all."""
    from sparktop.commands.main import main

    url, path = _configured_ollama(httpserver, tmp_path)
    started = time.monotonic()
    assert main(["--once", "--json", "--config", str(path)]) == 0
    took = time.monotonic() - started
    printed = json.loads(capsys.readouterr().out)
    (report,) = [r for r in printed["services"] if r["endpoint"] == url]
    assert [m["name"] for m in report["models"]] == ["llama3.1:70b", "qwen2.5-coder:7b"]
    assert took < 5, f"--once took {took:.1f} s"


def test_once_samples_again_only_when_a_background_collector_has_something(capsys):
    """The second sample costs a whole live reading: taken only when settle() says a server answered."""
    from sparktop.commands.dashboard import _print_once
    from sparktop.sources.demo import DemoSource

    class Counting(DemoSource):
        def __init__(self, found: bool) -> None:
            super().__init__()
            self.found, self.samples, self.settled = found, 0, []

        def sample(self):
            self.samples += 1
            return super().sample()

        def settle(self, timeout: float) -> bool:
            self.settled.append(timeout)
            return self.found

    for found, samples in ((False, 1), (True, 2)):
        source = Counting(found)
        assert _print_once(source, as_json=True, units="GiB") == 0
        assert source.samples == samples and len(source.settled) == 1
        assert json.loads(capsys.readouterr().out)["source"] == "demo"


def _recorded_models(path: Path, url: str) -> list[list[str]]:
    from sparktop.sources.replay import ReplaySource
    from sparktop.sources.snapshot_source import SourceExhausted

    source = ReplaySource(path)
    seen: list[list[str]] = []
    try:
        while True:
            snap = source.sample()
            seen += [[m.name for m in r.models] for r in snap.services if r.endpoint == url]
    except SourceExhausted:
        return seen
    finally:
        source.close()


def test_record_records_the_servers_the_config_lists(httpserver, tmp_path):
    """`sparktop record` opened the live source without the config: a configured server was never read."""
    from sparktop.commands.main import main

    url, config = _configured_ollama(httpserver, tmp_path)
    out = tmp_path / "run.jsonl"
    argv = ["record", str(out), "--config", str(config), "--interval", "0.25", "--duration", "1.5"]
    assert main(argv) == 0
    assert ["llama3.1:70b", "qwen2.5-coder:7b"] in _recorded_models(out, url)


def test_an_option_given_before_the_command_is_kept(httpserver, tmp_path):
    """`sparktop --config FILE record OUT`: argparse let the command's default (no file) overwrite it."""
    from sparktop.commands.main import build_parser, main, parse_command_line

    url, config = _configured_ollama(httpserver, tmp_path)
    out = tmp_path / "run.jsonl"
    assert main(["--config", str(config), "record", str(out), "--interval", "0.25", "--duration", "1.5"]) == 0
    assert ["llama3.1:70b", "qwen2.5-coder:7b"] in _recorded_models(out, url)
    for argv, expected in (
        (["--config", "a.toml", "serve"], "a.toml"),
        (["serve", "--config", "b.toml"], "b.toml"),
        (["--config", "a.toml", "serve", "--config", "b.toml"], "b.toml"),  # after the command wins
        (["--replay", "x.jsonl", "record", "out"], None),
    ):
        opts = parse_command_line(build_parser(argv), argv)
        assert opts.config == (Path(expected) if expected else None), argv
    argv = ["--replay", "x.jsonl", "record", "out"]
    assert parse_command_line(build_parser(argv), argv).replay == "x.jsonl"
    argv = ["record", "out"]
    assert parse_command_line(build_parser(argv), argv).interval == 1.0  # the command's own default stays


def test_plan_live_baseline_sees_a_model_the_configured_server_holds(httpserver, tmp_path, capsys):
    """The plan's live baseline reads the configured server. A model loaded there is counted only for what it
    may still add when the machine shows it held (tests/unit/test_plan_measured.py); this test server's
    claim is held by nothing on this machine, so it is counted in full and the plan says why (issue 27.3: a
    server's own figure must not make a plan more optimistic)."""
    from sparktop.commands.main import main

    url, config = _configured_ollama(httpserver, tmp_path)
    main(["plan", "llama3.1:70b", "--config", str(config)])
    out = capsys.readouterr().out
    assert f"ollama at {url} lists it as loaded, but nothing on this machine is seen holding" in out, out
    assert "already running" not in out
