"""Compatibility path: executions and their lifecycle live in ``rampart.engine``."""

from rampart.engine import (
    BaseExecution,
    ExecutionEvent,
    ExecutionEventData,
    ExecutionEventHandler,
    current_framework_handlers,
    framework_handlers,
)

__all__ = [
    "BaseExecution",
    "ExecutionEvent",
    "ExecutionEventData",
    "ExecutionEventHandler",
    "current_framework_handlers",
    "framework_handlers",
]
