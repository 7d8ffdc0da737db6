"""The internal face of ``rampart.core``: what other rooms take from its private modules.

For the model's rules that other rooms apply but users never call: the adapter and
evaluator contract checks, failure classification, the trial rule and a trial group's
outcome, the statistics, severities, verdict polarity and the keys a tested case
carries; and the public names the package loads lazily. What is not here comes from
``rampart.core`` itself; how the face loads is in ``docs/architecture.md`` ("Internal
faces").
"""

from typing import TYPE_CHECKING

from rampart._lazy import lazy_attributes

if TYPE_CHECKING:
    from rampart.core._contract import (
        check_entered,
        convert_checked,
        create_session,
        enter_handle,
        enter_session,
        evaluate_checked,
        evaluator_raised,
        exit_handle,
        exit_session,
        handle_delivered,
        is_handle,
        next_decision,
        normalise_evaluation,
        send_checked,
        type_name,
    )
    from rampart.core._dataclass import dataclass_compatible
    from rampart.core._failures import Failure, FailureKind, classify_failure, type_label
    from rampart.core._gaps import as_text, as_text_list, gaps_of, summarize_undetermined
    from rampart.core._group_outcome import (
        RULE_NOT_RECORDED,
        GroupInterval,
        StatusCounts,
        TrialGroupOutcome,
        interruption,
        population_outcome,
        rebuild_results,
        tally_outcome,
    )
    from rampart.core._population import CloneOutcome, PopulationRef
    from rampart.core._protocols import check_driver, check_evaluator
    from rampart.core._severity import severity, worst
    from rampart.core._stats import fisher_exact, holm, mcnemar, percent, wilson_interval
    from rampart.core._tested import (
        CASE_KEY,
        HARM_TAGS_KEY,
        PARAM_ID_KEY,
        PARAMS_KEY,
        PAYLOAD_KEY,
        clone_base,
        clone_suffix,
        harm_labels,
        owning_test,
        payload_ids,
    )
    from rampart.core._trial_rule import TrialRule, TrialTally, TrialVerdict, check_rule
    from rampart.core._verdicts import Polarity, resolve_verdict

_FACE = {
    "check_entered": "rampart.core._contract",
    "convert_checked": "rampart.core._contract",
    "create_session": "rampart.core._contract",
    "enter_handle": "rampart.core._contract",
    "enter_session": "rampart.core._contract",
    "evaluate_checked": "rampart.core._contract",
    "evaluator_raised": "rampart.core._contract",
    "exit_handle": "rampart.core._contract",
    "exit_session": "rampart.core._contract",
    "handle_delivered": "rampart.core._contract",
    "is_handle": "rampart.core._contract",
    "next_decision": "rampart.core._contract",
    "normalise_evaluation": "rampart.core._contract",
    "send_checked": "rampart.core._contract",
    "type_name": "rampart.core._contract",
    "dataclass_compatible": "rampart.core._dataclass",
    "Failure": "rampart.core._failures",
    "FailureKind": "rampart.core._failures",
    "classify_failure": "rampart.core._failures",
    "type_label": "rampart.core._failures",
    "as_text": "rampart.core._gaps",
    "as_text_list": "rampart.core._gaps",
    "gaps_of": "rampart.core._gaps",
    "summarize_undetermined": "rampart.core._gaps",
    "GroupInterval": "rampart.core._group_outcome",
    "RULE_NOT_RECORDED": "rampart.core._group_outcome",
    "StatusCounts": "rampart.core._group_outcome",
    "TrialGroupOutcome": "rampart.core._group_outcome",
    "population_outcome": "rampart.core._group_outcome",
    "rebuild_results": "rampart.core._group_outcome",
    "tally_outcome": "rampart.core._group_outcome",
    "CloneOutcome": "rampart.core._population",
    "PopulationRef": "rampart.core._population",
    "check_driver": "rampart.core._protocols",
    "check_evaluator": "rampart.core._protocols",
    "severity": "rampart.core._severity",
    "worst": "rampart.core._severity",
    "fisher_exact": "rampart.core._stats",
    "holm": "rampart.core._stats",
    "mcnemar": "rampart.core._stats",
    "percent": "rampart.core._stats",
    "wilson_interval": "rampart.core._stats",
    "CASE_KEY": "rampart.core._tested",
    "HARM_TAGS_KEY": "rampart.core._tested",
    "PARAMS_KEY": "rampart.core._tested",
    "PARAM_ID_KEY": "rampart.core._tested",
    "PAYLOAD_KEY": "rampart.core._tested",
    "clone_base": "rampart.core._tested",
    "clone_suffix": "rampart.core._tested",
    "harm_labels": "rampart.core._tested",
    "owning_test": "rampart.core._tested",
    "payload_ids": "rampart.core._tested",
    "TrialRule": "rampart.core._trial_rule",
    "TrialTally": "rampart.core._trial_rule",
    "TrialVerdict": "rampart.core._trial_rule",
    "check_rule": "rampart.core._trial_rule",
    "Polarity": "rampart.core._verdicts",
    "resolve_verdict": "rampart.core._verdicts",
    "interruption": "rampart.core._group_outcome",
}
__getattr__, __dir__ = lazy_attributes(__name__, globals(), _FACE, uncached=frozenset(_FACE))

__all__ = [
    "CASE_KEY",
    "CloneOutcome",
    "Failure",
    "FailureKind",
    "GroupInterval",
    "HARM_TAGS_KEY",
    "PARAMS_KEY",
    "PARAM_ID_KEY",
    "PAYLOAD_KEY",
    "Polarity",
    "PopulationRef",
    "RULE_NOT_RECORDED",
    "StatusCounts",
    "TrialGroupOutcome",
    "TrialRule",
    "TrialTally",
    "TrialVerdict",
    "as_text",
    "as_text_list",
    "check_driver",
    "check_entered",
    "check_evaluator",
    "check_rule",
    "classify_failure",
    "clone_base",
    "clone_suffix",
    "convert_checked",
    "create_session",
    "dataclass_compatible",
    "enter_handle",
    "enter_session",
    "evaluate_checked",
    "evaluator_raised",
    "exit_handle",
    "exit_session",
    "fisher_exact",
    "gaps_of",
    "handle_delivered",
    "harm_labels",
    "holm",
    "interruption",
    "is_handle",
    "mcnemar",
    "next_decision",
    "normalise_evaluation",
    "owning_test",
    "payload_ids",
    "percent",
    "population_outcome",
    "rebuild_results",
    "resolve_verdict",
    "send_checked",
    "severity",
    "summarize_undetermined",
    "tally_outcome",
    "type_label",
    "type_name",
    "wilson_interval",
    "worst",
]
