"""``TextMemo``: a cache of what was worked out from texts, bounded by the texts it holds.

The simulated agent and the test server see the same payloads again and again (every
trial of a scenario), so they remember what they worked out from each text. What they
see is also hostile: a client that sends a new 3 MB prompt every time must not make
the cache grow with it. So a memo is bounded twice, by entries and by the characters
of the texts it keeps alive, and a text longer than ``entry_chars`` is never kept
(working it out again costs no more than the request that carried it). A full memo is
cleared, which is cheap and keeps the common case (few distinct texts) fast.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Generic, TypeVar

if TYPE_CHECKING:
    from collections.abc import Callable, Hashable

__all__ = ["TextMemo"]

K = TypeVar("K", bound="Hashable")
V = TypeVar("V")


class TextMemo(Generic[K, V]):
    """Values by key, for keys that hold ``chars`` characters of text (see the module
    docstring). Safe to share between the event loop and worker threads."""

    __slots__ = ("_chars", "_entries", "_entry_chars", "_lock", "_max_chars", "_max_entries")

    def __init__(
        self,
        *,
        max_entries: int = 4096,
        max_chars: int = 8 * 1024 * 1024,
        entry_chars: int = 64 * 1024,
    ) -> None:
        self._entries: dict[K, V] = {}
        self._max_entries = max_entries
        self._max_chars = max_chars
        self._entry_chars = entry_chars
        self._chars = 0
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def chars(self) -> int:
        """Characters of text the memo keeps alive now."""
        return self._chars

    def get(self, key: K, chars: int, make: Callable[[], V]) -> V:
        """The value remembered for ``key``, else ``make()`` (remembered when
        ``chars``, the size of the text behind ``key``, is at most ``entry_chars``)."""
        try:
            return self._entries[key]
        except KeyError:
            pass
        value = make()
        if chars <= self._entry_chars:
            with self._lock:
                full = len(self._entries) >= self._max_entries
                if full or self._chars + chars > self._max_chars:
                    self._entries.clear()
                    self._chars = 0
                if key not in self._entries:
                    self._entries[key] = value
                    self._chars += chars
        return value

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._chars = 0
