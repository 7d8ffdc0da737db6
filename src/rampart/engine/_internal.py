"""The internal face of ``rampart.engine``: what other rooms take from its private modules.

For what the plugin, the attacks and probes, the scans and the package's result context
drive the engine with: the result collector and the current trial, the trial
declarations, the fan-out, the execution's lifecycle helpers, the error boundary's
failure and exception-group plumbing; and the public names the package loads lazily.
What is not here comes from ``rampart.engine`` itself; how the face loads is in
``docs/architecture.md`` ("Internal faces").
"""

from typing import TYPE_CHECKING

from rampart._lazy import lazy_attributes

if TYPE_CHECKING:
    from rampart.engine._auto_concurrency import ConcurrencyStatistics
    from rampart.engine._exceptions import combine, raise_unwrapped
    from rampart.engine._execution import (
        BaseExecution,
        ExecutionEventHandler,
        boundary_failure,
        current_framework_handlers,
        default_handler_factory,
        framework_handlers,
        never_started,
        register_default_handler_factory,
        tracking_executions,
    )
    from rampart.engine._fanout import bound, fan_out
    from rampart.engine._pipeline import evaluate
    from rampart.engine._populations import TrialConfig, declaring_trials, observing_populations
    from rampart.engine._results import (
        ResultCollectionHandler,
        ResultCollector,
        TrialInfo,
        bind_collector,
        current_trial,
        record_result,
    )
    from rampart.engine._strategy import TraceExecution
    from rampart.engine._trace import TraceRun

_FACE = {
    "ConcurrencyStatistics": "rampart.engine._auto_concurrency",
    "combine": "rampart.engine._exceptions",
    "raise_unwrapped": "rampart.engine._exceptions",
    "BaseExecution": "rampart.engine._execution",
    "ExecutionEventHandler": "rampart.engine._execution",
    "boundary_failure": "rampart.engine._execution",
    "current_framework_handlers": "rampart.engine._execution",
    "default_handler_factory": "rampart.engine._execution",
    "framework_handlers": "rampart.engine._execution",
    "never_started": "rampart.engine._execution",
    "register_default_handler_factory": "rampart.engine._execution",
    "tracking_executions": "rampart.engine._execution",
    "bound": "rampart.engine._fanout",
    "fan_out": "rampart.engine._fanout",
    "evaluate": "rampart.engine._pipeline",
    "TrialConfig": "rampart.engine._populations",
    "declaring_trials": "rampart.engine._populations",
    "observing_populations": "rampart.engine._populations",
    "ResultCollectionHandler": "rampart.engine._results",
    "ResultCollector": "rampart.engine._results",
    "TrialInfo": "rampart.engine._results",
    "bind_collector": "rampart.engine._results",
    "current_trial": "rampart.engine._results",
    "record_result": "rampart.engine._results",
    "TraceExecution": "rampart.engine._strategy",
    "TraceRun": "rampart.engine._trace",
}
__getattr__, __dir__ = lazy_attributes(__name__, globals(), _FACE, uncached=frozenset(_FACE))

__all__ = [
    "BaseExecution",
    "ConcurrencyStatistics",
    "ExecutionEventHandler",
    "ResultCollectionHandler",
    "ResultCollector",
    "TraceExecution",
    "TraceRun",
    "TrialConfig",
    "TrialInfo",
    "bind_collector",
    "bound",
    "boundary_failure",
    "combine",
    "current_framework_handlers",
    "current_trial",
    "declaring_trials",
    "default_handler_factory",
    "evaluate",
    "fan_out",
    "framework_handlers",
    "never_started",
    "observing_populations",
    "raise_unwrapped",
    "record_result",
    "register_default_handler_factory",
    "tracking_executions",
]
