"""Compatibility path: executions and their lifecycle live in ``rampart.engine``.

Also RAMPART's default-handler hook (``register_default_handler_factory`` /
``clear_default_handler_factory``, on rampart's context-variable mechanism) and its
0.1.0 per-turn helper ``evaluate_turn_async``.
"""

# layering: compatibility re-export, the one kind of module that may import a higher layer
from rampart.engine import (
    BaseExecution,
    ExecutionEvent,
    ExecutionEventData,
    ExecutionEventHandler,
    ExecutionHandlerFactory,
    clear_default_handler_factory,
    current_framework_handlers,
    evaluate_turn_async,
    framework_handlers,
    register_default_handler_factory,
)

__all__ = [
    "BaseExecution",
    "ExecutionEvent",
    "ExecutionEventData",
    "ExecutionEventHandler",
    "ExecutionHandlerFactory",
    "clear_default_handler_factory",
    "current_framework_handlers",
    "evaluate_turn_async",
    "framework_handlers",
    "register_default_handler_factory",
]
