from __future__ import annotations

import rampart.testing


class TestExports:
    def test_all_is_sorted_and_importable(self) -> None:
        """The package re-exports its public names with a sorted __all__."""
        names = rampart.testing.__all__
        assert list(names) == sorted(names)
        for name in names:
            assert getattr(rampart.testing, name) is not None

    def test_core_names_are_public(self) -> None:
        """The agents and the surface are importable from rampart.testing."""
        assert {"InMemorySurface", "ScriptedAgent", "SimulatedAgent", "Latency"} <= set(
            rampart.testing.__all__
        )
