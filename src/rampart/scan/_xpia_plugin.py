"""The pytest plugin ``rampart scan xpia`` loads: checks the scan before collection."""

from __future__ import annotations

import pytest

from rampart.scan._handover import register_marker
from rampart.scan._xpia_config import XpiaScanConfig


def pytest_configure(config: pytest.Config) -> None:
    register_marker(config)
    try:
        scan = XpiaScanConfig.from_env()
        if not scan.payloads():
            raise ValueError("the selection holds no payload")
        scan.key(scan.api_key_env)
        scan.key(scan.judge_api_key_env)
    except (ValueError, TypeError, RuntimeError) as error:
        raise pytest.UsageError(f"rampart scan xpia: {error}") from error
