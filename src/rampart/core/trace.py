"""Compatibility path: the trace runner lives in ``rampart.engine``."""

from rampart.engine import (
    EvaluationRecord,
    TraceRun,
    evaluate_final_trace,
    evaluate_final_trace_async,
    evaluate_terminal_async,
    run_trace,
    run_trace_async,
)

__all__ = [
    "EvaluationRecord",
    "TraceRun",
    "evaluate_final_trace",
    "evaluate_final_trace_async",
    "evaluate_terminal_async",
    "run_trace",
    "run_trace_async",
]
