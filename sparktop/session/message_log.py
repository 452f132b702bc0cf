"""The messages a session has to say (the dashboard's `M`): every alert raised and cleared, the exhaustion
banner, pressure levels, GPU throttles, problems in the data, stale data and the end of a recording, each
with its time. Bounded: the oldest go first, and how many went is counted, so hours of a flapping alert cost
no more than MAX_MESSAGES lines. Textual-free: `--once`, a guard or a test reads the same list."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass

from sparktop.core.safe_text import visible, visible_lines

MAX_MESSAGES = 500


@dataclass(frozen=True)
class Message:
    at: float  # seconds since the epoch: the data's time (a replay says when in the recording)
    title: str  # what kind: "creep", "exhaustion", "pressure", "GPU slowed", "problem", "stop" ...
    text: str  # plain text (control characters made visible), never markup


class MessageLog:
    """Messages oldest first, at most `limit` of them (`dropped` counts those that went)."""

    def __init__(self, limit: int = MAX_MESSAGES) -> None:
        self._items: deque[Message] = deque(maxlen=max(1, limit))
        self.dropped = 0

    def add(self, at: float, title: str, text: str) -> Message:
        if len(self._items) == self._items.maxlen:
            self.dropped += 1
        message = Message(float(at), visible(title), visible_lines(text))
        self._items.append(message)
        return message

    def __iter__(self) -> Iterator[Message]:
        return iter(list(self._items))

    def __len__(self) -> int:
        return len(self._items)


__all__ = ["MAX_MESSAGES", "Message", "MessageLog"]
