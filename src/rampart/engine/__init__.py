"""The execution engine: executions, the trace runner and concurrent trials, on anyio.

An execution (``BaseExecution.execute_async``) is one task group. The calling task is
the **session actor**, the one task that owns the adapter's session -- it opens it,
sends each request, emits one raw turn event per response and closes the session
shielded from cancellation; a **producer** task owns production: it asks the driver
for each prompt and waits for its turn; and, when there is an online stop check, the
**evaluator pipeline** task owns the stop decision: it runs the check on each turn
and then cancels production or lets the producer go on (without a stop check the
producer applies the pipeline's step itself). The next turn waits for the stop check,
so after a detection on turn k exactly k + 1 requests were sent. Keeping the session
in its own task means a hung agent (or a timeout) is cancelled there without tearing
down the producer's state. The tasks hand prompts and turns over through one-slot
mailboxes. Stop policies (``max_turns``, ``stop_when``, ``timeout``, trial early
stop) are cancel scopes; why production stopped is read after the scope exits.

``BaseExecution.execute_async`` is the one place an infrastructure failure becomes an
ERROR result; everything else propagates. ``execute_trials_async`` fans a scenario out
``n`` times under one ``CapacityLimiter`` and returns a ``PopulationResult``.

Modules: ``_execution`` (lifecycle and the error boundary), ``_trace`` (the runner),
``_actor`` (session actor), ``_pipeline`` (evaluator pipeline), ``_mailbox`` (the
one-slot hand-off between them), ``_policies`` (stop
scopes and their parameters), ``_strategy`` (the shared shape of attack and probe;
what each strategy declares lives in ``rampart.strategies``), ``_results`` (the
current result collector, which the pytest plugin sets), ``_populations`` (what a test
declares to the populations it runs, and who watches them), ``_trials``, ``_fanout``
and ``_auto_concurrency`` (concurrent trials, and the adaptive clone limit with its
``report_throttle`` channel), ``_exceptions`` (group plumbing). The names below load
on first access, so importing one engine module does not load the others.
See ``docs/executions.md``.
"""

from typing import TYPE_CHECKING

from rampart._lazy import lazy_attributes

if TYPE_CHECKING:
    from rampart.core.result import PopulationResult
    from rampart.engine._auto_concurrency import report_throttle
    from rampart.engine._execution import (
        BaseExecution,
        ExecutionEvent,
        ExecutionEventData,
        ExecutionEventHandler,
        ExecutionHandlerFactory,
        clear_default_handler_factory,
        current_framework_handlers,
        framework_handlers,
        register_default_handler_factory,
    )
    from rampart.engine._trace import (
        EvaluationRecord,
        TraceRun,
        evaluate_final_trace,
        evaluate_final_trace_async,
        evaluate_terminal_async,
        evaluate_turn_async,
        run_trace,
        run_trace_async,
    )
    from rampart.engine._trials import execute_trials_async

# Loaded on first access, so that importing one engine module (the pytest plugin's
# result context, ``_results``) does not load the whole engine.
_LAZY = {
    "BaseExecution": "rampart.engine._execution",
    "EvaluationRecord": "rampart.engine._trace",
    "ExecutionEvent": "rampart.engine._execution",
    "ExecutionEventData": "rampart.engine._execution",
    "ExecutionEventHandler": "rampart.engine._execution",
    "ExecutionHandlerFactory": "rampart.engine._execution",
    "PopulationResult": "rampart.core.result",
    "TraceRun": "rampart.engine._trace",
    "clear_default_handler_factory": "rampart.engine._execution",
    "current_framework_handlers": "rampart.engine._execution",
    "evaluate_final_trace": "rampart.engine._trace",
    "evaluate_final_trace_async": "rampart.engine._trace",
    "evaluate_terminal_async": "rampart.engine._trace",
    "evaluate_turn_async": "rampart.engine._trace",
    "execute_trials_async": "rampart.engine._trials",
    "framework_handlers": "rampart.engine._execution",
    "register_default_handler_factory": "rampart.engine._execution",
    "report_throttle": "rampart.engine._auto_concurrency",
    "run_trace": "rampart.engine._trace",
    "run_trace_async": "rampart.engine._trace",
}
__getattr__, __dir__ = lazy_attributes(__name__, globals(), _LAZY)

__all__ = [
    "BaseExecution",
    "EvaluationRecord",
    "ExecutionEvent",
    "ExecutionEventData",
    "ExecutionEventHandler",
    "ExecutionHandlerFactory",
    "PopulationResult",
    "TraceRun",
    "clear_default_handler_factory",
    "current_framework_handlers",
    "evaluate_final_trace",
    "evaluate_final_trace_async",
    "evaluate_terminal_async",
    "evaluate_turn_async",
    "execute_trials_async",
    "framework_handlers",
    "register_default_handler_factory",
    "report_throttle",
    "run_trace",
    "run_trace_async",
]
