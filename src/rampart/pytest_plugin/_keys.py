"""The ``config.stash`` key under which the session's plugin object lives."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from rampart.pytest_plugin._session import RampartPlugin

__all__ = ["PLUGIN_KEY"]

PLUGIN_KEY: pytest.StashKey[RampartPlugin] = pytest.StashKey()
