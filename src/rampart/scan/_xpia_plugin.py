"""The pytest plugin ``rampart scan xpia`` loads: checks the scan before collection."""

from __future__ import annotations

import pytest

from rampart.scan._xpia_config import XpiaScanConfig


def pytest_configure(config: pytest.Config) -> None:
    scan = XpiaScanConfig.from_env()
    try:
        if not scan.payloads():
            raise ValueError("the selection holds no payload")
        scan.key(scan.api_key_env)
        scan.key(scan.judge_api_key_env)
    except (ValueError, TypeError) as error:
        raise pytest.UsageError(f"rampart scan xpia: {error}") from error
