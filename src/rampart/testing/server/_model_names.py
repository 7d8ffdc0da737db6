"""Settings in a simulated model's name: ``sim-tools:follow=0.5,seed=7``.

The tool-calling models (``sim-agentdojo``, ``sim-tools``) take their settings after a
colon, comma-separated ``key=value`` pairs, so a client that can only name a model
(an agent framework's ``OPENAI_MODEL``) can still choose them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rampart.testing.server._wire import BadModelInput

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

__all__ = ["model_settings", "probability"]


def probability(text: str) -> float:
    """A probability written in a model name (``ValueError`` outside ``[0, 1]``)."""
    value = float(text)
    if not 0.0 <= value <= 1.0:
        raise ValueError(text)
    return value


def model_settings(
    model: str, fields: Mapping[str, tuple[Callable[[str], object], str]]
) -> dict[str, object]:
    """The settings ``model`` carries after its colon: ``fields`` maps each key to its
    reader and how the expected form shows it (``{"follow": (probability, "P")}``).
    ``BadModelInput`` naming the expected form for an unknown key or a bad value."""
    base, _, suffix = model.partition(":")
    values: dict[str, object] = {}
    for item in filter(None, suffix.split(",")):
        key, sep, text = item.partition("=")
        try:
            if not sep or key not in fields:
                raise ValueError(key)
            values[key] = fields[key][0](text)
        except ValueError:
            shown = ",".join(f"{name}={form}" for name, (_, form) in fields.items())
            raise BadModelInput(
                f"model {model!r}: expected {base}[:{shown}] (probabilities in [0, 1])"
            ) from None
    return values
