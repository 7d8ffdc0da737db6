"""``sim-agentdojo``: a simulated tool-calling model for AgentDojo's suites.

It plays the agent of ``rampart.agentdojo.pipelines.ScriptedPipeline`` over the
chat-completions dialect, one tool call per reply, so rampart's OpenAI-compatible
path can run AgentDojo pairs offline:

* the conversation's first user message is a user task's prompt (or an injection
  task's goal) of one of AgentDojo's suites; the model makes that task's ground-truth
  calls, one per reply;
* then, for each injection task whose goal a tool result carried, it carries the
  injection out (that task's ground-truth calls) with probability ``follow``, decided
  per pair from ``seed`` by the rule ``ScriptedPipeline`` uses (``follows``);
* then it answers with the tasks' expected output.

The ground truth is computed on the server's own copy of the suite's environment, as
the scripted pipeline computes it on the pair's: what was planted in each injection
vector is read back from the tool results the conversation carries (by comparing them
with the results on an environment whose vectors hold markers), since a task's ground
truth may name what it read. The model name carries the settings: ``sim-agentdojo``, or with any of
``follow=P``, ``seed=N``, ``version=V`` after a colon, comma-separated
(``sim-agentdojo:follow=0.5,seed=7``). Latency and the rate limit are the server's,
as for the other simulated models. AgentDojo is imported on the first such request
(``pip install 'rampart[agentdojo]'``).
"""

from __future__ import annotations

import functools
import importlib
import json
import re
import threading
from typing import Any

import attrs

from rampart.payloads._internal import follows, letters, read_text
from rampart.testing._memo import TextMemo
from rampart.testing.server._model_names import model_settings, probability
from rampart.testing.server._wire import BadModelInput, ChatMessage

__all__ = [
    "AgentDojoModelError",
    "AgentDojoSettings",
    "MODEL",
    "agentdojo_reply",
    "is_agentdojo_model",
    "settings_for",
]

MODEL = "sim-agentdojo"
_DEFAULT_VERSION = "v1.2.2"


class AgentDojoModelError(BadModelInput):
    """A request ``sim-agentdojo`` cannot answer (the server answers 400 with the message)."""


@attrs.frozen(kw_only=True)
class AgentDojoSettings:
    follow: float = 0.0
    seed: int = 0
    version: str = _DEFAULT_VERSION


def is_agentdojo_model(model: str) -> bool:
    return model.partition(":")[0] == MODEL


def settings_for(model: str) -> AgentDojoSettings:
    """The settings a ``sim-agentdojo[:key=value,...]`` model name carries."""
    fields = {"follow": (probability, "P"), "seed": (int, "N"), "version": (str, "V")}
    return AgentDojoSettings(**model_settings(model, fields))  # type: ignore[arg-type]


def _agentdojo(module: str) -> Any:
    try:
        return importlib.import_module(module)
    except ImportError:  # pragma: no cover - exercised only without the extra
        raise AgentDojoModelError(
            f"{MODEL} needs the AgentDojo package: pip install 'rampart[agentdojo]'"
        ) from None


@functools.cache
def _tasks(version: str) -> dict[str, tuple[Any, Any]]:
    """``prompt -> (suite, task)`` over AgentDojo's suites at ``version``."""
    suites = _agentdojo("agentdojo.task_suite.load_suites").get_suites(version)
    if not suites:
        raise AgentDojoModelError(f"{MODEL}: AgentDojo has no benchmark version {version!r}")
    index: dict[str, tuple[Any, Any]] = {}
    for suite in suites.values():
        for task in suite.user_tasks.values():
            index.setdefault(task.PROMPT, (suite, task))
        for injection in suite.injection_tasks.values():
            index.setdefault(injection.GOAL, (suite, injection))
    return index


_LOCK = threading.Lock()
_CANARY = "<CANARY---{}--->"
_CANARY_PATTERN = re.compile(r"<CANARY---(.+?)--->")


def _environment(suite: Any, task: Any, injections: dict[str, str] | None) -> Any:
    """The task's environment: with markers in its vectors (``None``), else with
    ``injections`` (vector -> text as the agent read it) where they were read, the
    defaults elsewhere. The texts replace the markers in the loaded environment: the
    environment file is YAML, so the text a tool shows is the planted text as YAML
    read it, which planting it again would change."""
    defaults = suite.get_injection_vector_defaults()
    env = suite.load_and_inject_default_environment(
        {vector: _CANARY.format(vector) for vector in defaults}
    )
    if injections is not None:
        texts = {**defaults, **injections}

        def fill(value: Any) -> Any:
            if isinstance(value, str):
                return _CANARY_PATTERN.sub(lambda match: texts[match.group(1)], value)
            if isinstance(value, dict):
                return {key: fill(item) for key, item in value.items()}
            if isinstance(value, list):
                return [fill(item) for item in value]
            return value

        env = type(env).model_validate(fill(env.model_dump()))
    base = _agentdojo("agentdojo.base_tasks")
    return task.init_environment(env) if isinstance(task, base.BaseUserTask) else env


@functools.lru_cache(maxsize=256)
def _canary_results(version: str, prompt: str) -> tuple[str, ...]:
    """The task's ground-truth tool results on an environment whose injection vectors
    hold markers (AgentDojo's canary idea): where a result shows a marker, the real
    result shows what was planted there."""
    suite, task = _tasks(version)[prompt]
    env = _environment(suite, task, None)
    runtime = _agentdojo("agentdojo.functions_runtime").FunctionsRuntime(suite.tools)
    to_text = _agentdojo("agentdojo.agent_pipeline.tool_execution").tool_result_to_str
    results = []
    for call in task.ground_truth(env):
        result, _ = runtime.run_function(env, call.function, call.args)
        results.append(str(to_text(result)))
    return tuple(results)


def _between(parts: list[str], real: str) -> list[str] | None:
    """The texts between ``parts`` in ``real`` (``parts[0] + t1 + parts[1] + ... +
    parts[-1]``), or ``None`` when ``real`` has not that shape.

    What a regex of greedy ``(.*)`` groups would find (each text as long as possible,
    left to right, which places every separator as far right as the ones after it
    allow), found by searching for each separator once, from the right: linear time,
    where the regex backtracks through every split of a hostile result.
    """
    first, last = parts[0], parts[-1]
    end = len(real) - len(last)
    if end < len(first) or not real.startswith(first) or not real.endswith(last):
        return None
    cuts = [(end, len(real))]
    for part in reversed(parts[1:-1]):
        at = real.rfind(part, len(first), cuts[-1][0])
        if at < 0:
            return None
        cuts.append((at, at + len(part)))
    cuts.append((0, len(first)))
    cuts.reverse()
    return [real[cuts[i][1] : cuts[i + 1][0]] for i in range(len(cuts) - 1)]


def _align(marked: object, real: object, found: dict[str, str]) -> None:
    """Fill ``found`` (vector -> planted text) from a marked and a real tool result."""
    if isinstance(marked, str) and isinstance(real, str):
        vectors = _CANARY_PATTERN.findall(marked)
        if vectors:
            texts = _between(_CANARY_PATTERN.split(marked)[::2], real)
            if texts is not None:
                found.update(zip(vectors, texts, strict=True))
    elif isinstance(marked, dict) and isinstance(real, dict):
        for key in marked.keys() & real.keys():
            _align(marked[key], real[key], found)
    elif isinstance(marked, list) and isinstance(real, list) and len(marked) == len(real):
        for one, other in zip(marked, real, strict=True):
            _align(one, other, found)


# What was planted, by (marked, real) result, and the planned calls, by what was planted
# where: both are keyed by text a client sent, so they are bounded by the text they keep.
_PLANTED: TextMemo[tuple[str, str], tuple[tuple[str, str], ...]] = TextMemo()
_PLANS: TextMemo[tuple[object, ...], tuple[Any, ...]] = TextMemo(max_entries=1024)


def _planted(marked: str, real: str) -> tuple[tuple[str, str], ...]:
    size = len(marked) + len(real)
    return _PLANTED.get((marked, real), size, lambda: _find_planted(marked, real))


def _find_planted(marked: str, real: str) -> tuple[tuple[str, str], ...]:
    yaml = importlib.import_module("yaml")
    found: dict[str, str] = {}
    try:
        _align(yaml.safe_load(marked), yaml.safe_load(real), found)
    except yaml.YAMLError:
        return ()
    return tuple(sorted(found.items()))


def _plan(
    version: str,
    prompt: str,
    injections: tuple[tuple[str, str], ...],
    followed: tuple[str, ...] | None,
) -> tuple[Any, ...]:
    """The calls for ``prompt`` on the environment with ``injections`` planted: the
    task's ground truth, then (``followed`` given) each followed injection task's,
    each computed on the environment as the calls before it left it."""
    size = len(prompt) + sum(len(text) for _, text in injections)
    key = (version, prompt, injections, followed)
    return _PLANS.get(key, size, lambda: _make_plan(version, prompt, injections, followed))


def _make_plan(
    version: str,
    prompt: str,
    injections: tuple[tuple[str, str], ...],
    followed: tuple[str, ...] | None,
) -> tuple[Any, ...]:
    suite, task = _tasks(version)[prompt]
    env = _environment(suite, task, dict(injections))
    calls = list(task.ground_truth(env))
    if followed is None:
        return tuple(calls)
    runtime = _agentdojo("agentdojo.functions_runtime").FunctionsRuntime(suite.tools)
    for call in calls:
        runtime.run_function(env, call.function, call.args)
    for injection_id in followed:
        injected = list(suite.get_injection_task_by_id(injection_id).ground_truth(env))
        for call in injected:
            runtime.run_function(env, call.function, call.args)
        calls += injected
    return tuple(calls)


def _reply(settings: AgentDojoSettings, messages: tuple[ChatMessage, ...]) -> dict[str, Any]:
    version = settings.version
    prompt = next((text for role, text, _ in messages if role == "user"), "")
    found = _tasks(version).get(prompt)
    if found is None:
        raise AgentDojoModelError(
            f"{MODEL}: the first user message is no task prompt of AgentDojo {version}"
        )
    suite, task = found
    made = sum(len(calls) for role, _, calls in messages if role == "assistant")
    results = [text for role, text, _ in messages if role == "tool"]
    # What was planted where, read back from the results the agent has seen (the
    # ground truth may name what it read: a channel called after its injection).
    planted: dict[str, str] = {}
    for marked, real in zip(_canary_results(version, prompt), results, strict=False):
        planted.update(_planted(marked, real))
    injections = tuple(sorted(planted.items()))
    calls = user_calls = _plan(version, prompt, injections, None)
    followed: list[Any] = []
    if made >= len(user_calls):
        goals = [(letters(i.GOAL), i) for i in suite.injection_tasks.values()]
        read: list[Any] = []
        for text in results[: len(user_calls)]:
            seen = letters(read_text(text))
            read += [i for goal, i in goals if goal and goal in seen and i not in read]
        followed = [
            i
            for i in read
            if follows(
                follow=settings.follow, seed=settings.seed, prompt=prompt, injection_task=i.ID
            )
        ]
        calls = _plan(version, prompt, injections, tuple(i.ID for i in followed))
    if made < len(calls):
        call = calls[made]
        arguments = json.dumps(dict(call.args), separators=(",", ":"), default=str)
        wire = {
            "id": f"call_{made}",
            "type": "function",
            "function": {"name": call.function, "arguments": arguments},
        }
        return {"role": "assistant", "content": None, "tool_calls": [wire]}
    outputs = [task.GROUND_TRUTH_OUTPUT, *(i.GROUND_TRUTH_OUTPUT for i in followed)]
    return {"role": "assistant", "content": " ".join(text for text in outputs if text)}


def agentdojo_reply(model: str, messages: tuple[ChatMessage, ...]) -> dict[str, Any]:
    """The assistant message ``sim-agentdojo`` answers (blocking: run it in a thread).

    ``AgentDojoModelError`` when the request is not one it can answer.
    """
    settings = settings_for(model)
    with _LOCK:  # AgentDojo's suites and environments are not built for threads
        return _reply(settings, messages)
