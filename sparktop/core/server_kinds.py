"""The model servers sparktop speaks to: one `ServerKind` record each, and the one tuple of them.

A new kind is one module in `collect/servers/` (its `read` and, when an answer identifies it, `recognises`)
and one line in `SERVER_KINDS`: discovery, identification, the config's allowed `kind` values and the owner
of a server's memory all come from here. A leaf of the ground floor (no sparktop imports): the config
validates `[[servers]] kind` against it without knowing the collectors.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ServerKind:
    name: str  # as readings, the screen and the snapshot name it ("llama.cpp")
    config_name: str  # as a user types it in `[[servers]] kind = ...` ("llamacpp": one word)
    default_port: int
    module: str  # its reader: sparktop.collect.servers.<module> (`read`, and `recognises` with probe_path)
    # Its /metrics names start with this: whoever answers with them is this kind.
    metric_prefix: str = ""  # "": its metrics do not say
    # A path whose JSON answer identifies it when its /metrics does not (`module.recognises(answer)`).
    probe_path: str | None = None
    # Host processes that run it (not in a container): the owner of the memory its models hold.
    process_names: tuple[str, ...] = ()
    # Its default port is its own (11434 is Ollama's): no need to ask who answers there. 8000, 8080 and
    # 30000 are common ports, where whoever answers is identified by what it says.
    owns_port: bool = False


OLLAMA = ServerKind(
    "ollama", "ollama", 11434, "ollama", probe_path="/api/ps", process_names=("ollama",), owns_port=True
)
VLLM = ServerKind("vllm", "vllm", 8000, "vllm", metric_prefix="vllm:", process_names=("vllm",))
SGLANG = ServerKind("sglang", "sglang", 30000, "sglang", metric_prefix="sglang:", process_names=("sglang",))
LLAMA_CPP = ServerKind(
    "llama.cpp",
    "llamacpp",
    8080,
    "llamacpp",
    metric_prefix="llamacpp:",
    probe_path="/props",
    process_names=("llama-server", "llama-server.exe", "server"),
)

# Every kind, in the order the default ports are probed and an answer is identified.
SERVER_KINDS: tuple[ServerKind, ...] = (OLLAMA, VLLM, SGLANG, LLAMA_CPP)
CONFIG_NAMES = tuple(kind.config_name for kind in SERVER_KINDS)


def kind_named(name: str) -> ServerKind:
    """The kind a reading or a config entry names (`llama.cpp` or `llamacpp`); KeyError for no kind."""
    for kind in SERVER_KINDS:
        if name in (kind.name, kind.config_name):
            return kind
    raise KeyError(name)
