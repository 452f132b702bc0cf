"""One record per model-server kind (core/server_kinds.py): discovery, identification, the config's allowed
kinds and the owner of a server's memory all follow from SERVER_KINDS: a new kind is one module and one
line."""

from __future__ import annotations

import inspect

import pytest

from sparktop.collect.servers.discovery import config_endpoints, default_endpoints, reader
from sparktop.core.server_kinds import CONFIG_NAMES, SERVER_KINDS, kind_named
from sparktop.settings.config import ServerEndpoint


@pytest.mark.parametrize("kind", SERVER_KINDS, ids=[k.name for k in SERVER_KINDS])
def test_each_kind_has_its_reader_and_its_way_to_be_recognised(kind):
    module = reader(kind)
    assert inspect.signature(module.read).parameters.keys() >= {"base", "timeout", "want_version"}
    assert module.KIND is kind
    # A kind on a common port must be identifiable by what it answers: a metric prefix or a probe path.
    assert kind.owns_port or kind.metric_prefix or kind.probe_path
    if kind.probe_path:
        assert module.recognises({"not": "it"}) is False


def test_every_default_port_is_probed_and_only_an_owned_port_is_taken_at_its_word():
    endpoints = {e.base: e for e in default_endpoints({})}
    for kind in SERVER_KINDS:
        endpoint = endpoints[f"http://127.0.0.1:{kind.default_port}"]
        assert endpoint.server == (kind.name if kind.owns_port else None)


def test_the_config_takes_exactly_the_kinds_config_names():
    for name in CONFIG_NAMES:
        assert ServerEndpoint(url="http://127.0.0.1:9999", kind=name).kind == name
        assert kind_named(name).config_name == name
    with pytest.raises(ValueError, match="must be 'ollama', 'vllm', 'sglang' or 'llamacpp', not 'tgi'"):
        ServerEndpoint(url="http://127.0.0.1:9999", kind="tgi")


def test_a_config_entry_names_a_kind_by_either_name():
    endpoints, errors = config_endpoints([{"url": "127.0.0.1:8081", "server": "llamacpp"}, "127.0.0.1:1"])
    assert errors == [] and [e.server for e in endpoints] == ["llama.cpp", None]
    _, errors = config_endpoints([{"url": "127.0.0.1:8081", "server": "tgi"}])
    assert errors == [
        "servers: unknown server 'tgi' for '127.0.0.1:8081' (one of ollama, vllm, sglang, llama.cpp)"
    ]
