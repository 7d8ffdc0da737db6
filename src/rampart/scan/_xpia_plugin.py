"""The pytest plugin ``rampart scan xpia`` loads: checks the scan before collection."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from rampart._redact import redact
from rampart.scan._handover import header, register_marker
from rampart.scan._xpia_config import XpiaScanConfig

if TYPE_CHECKING:
    from collections.abc import Generator


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


@pytest.hookimpl(wrapper=True)
def pytest_report_header(
    config: pytest.Config,
) -> Generator[None, list[str | list[str]], list[str | list[str]]]:
    """What is scanned, instead of where the scan's module and temporary ini live."""
    del config
    lines = yield
    scan = XpiaScanConfig.from_env()
    return header(
        lines,
        redact(
            f"rampart scan xpia: agent {scan.model} at {scan.base_url}, "
            f"judge {scan.judge_model} at {scan.judge_base_url}"
        ),
    )
