"""Built-in agents and surfaces for tests, demos and benchmarks.

``SimulatedAgent`` is a seeded toy agent that reads an ``InMemorySurface`` and may follow
injected instructions; ``ScriptedAgent`` is the test double for adapters (rampart's own
tests use it): it replays a script of responses, exceptions and callables and records
what it was sent. See ``docs/testing.md``.
"""

from rampart.testing._latency import Latency
from rampart.testing._scripted import (
    ScriptedAgent,
    ScriptedAgentStatistics,
    ScriptedSession,
    ScriptEntry,
    ScriptExhaustedError,
    ScriptFunction,
    ScriptStep,
)
from rampart.testing._simulated import (
    DEFAULT_SECRET,
    SimulatedAgent,
    SimulatedAgentOptions,
    SimulatedAgentStatistics,
    SimulatedSession,
)
from rampart.testing._surface import InMemoryInjectionHandle, InMemorySurface

__all__ = [
    "DEFAULT_SECRET",
    "InMemoryInjectionHandle",
    "InMemorySurface",
    "Latency",
    "ScriptEntry",
    "ScriptExhaustedError",
    "ScriptFunction",
    "ScriptStep",
    "ScriptedAgent",
    "ScriptedAgentStatistics",
    "ScriptedSession",
    "SimulatedAgent",
    "SimulatedAgentOptions",
    "SimulatedAgentStatistics",
    "SimulatedSession",
]
