"""Compatibility path: the trace runner lives in ``rampart.engine``."""

# layering: compatibility re-export, the one kind of module that may import a higher layer
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
