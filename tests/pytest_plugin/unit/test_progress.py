"""The progress line of one trial group (``format_snapshot``)."""

from __future__ import annotations

import json

from rampart.pytest_plugin._progress import Snapshot, format_snapshot


class TestFormat:
    def test_running_and_finished(self) -> None:
        running = Snapshot(
            key="k", name="test_x", n=50, done=20, safe=18, unsafe=1, error=1, elapsed=4.0
        )
        assert format_snapshot(running) == (
            "rampart test_x: 20/50 | 18 safe, 1 unsafe, 0 undet, 1 error | 5.0/s, ETA 6.0s"
        )
        finished = Snapshot(
            key="k", name="test_x", n=3, done=3, safe=3, elapsed=75.0, finished=True
        )
        assert format_snapshot(finished).endswith("| done in 1m15s")

    def test_width_shortens_the_name_not_the_numbers(self) -> None:
        snapshot = Snapshot(key="k", name="test_" + "x" * 100, n=5, done=1, safe=1, elapsed=1.0)
        line = format_snapshot(snapshot, 79)
        assert len(line) <= 79
        assert line.endswith("1/5 | 1 safe, 0 unsafe, 0 undet, 0 error | 1.0/s, ETA 4.0s")

    def test_at_80_columns_the_eta_and_the_reason_are_never_cut(self) -> None:
        """A long reason is shortened at a word (or left out), big counts take their short
        form: the ETA always ends the line, whole, within the width."""
        note = "rate-limited by the agent: waiting 2.5 s before the next request (429 Too Many)"
        snapshot = Snapshot(
            key="k",
            name="test_resists_exfiltration_by_email",
            n=1000,
            done=400,
            safe=380,
            unsafe=12,
            undetermined=5,
            error=3,
            elapsed=40.0,
            note=note,
        )
        line = format_snapshot(snapshot, 79)
        assert len(line) <= 79
        assert line.endswith("| 10.0/s, ETA 1m00s") or "| 10.0/s, ETA 1m00s |" in line
        assert "ETA 1m00s" in line
        if "| rate-limited" in line:  # what is kept of the reason ends at a word
            kept = line.split("| rate-limited", 1)[1]
            assert kept.endswith("…")
            assert ("rate-limited" + kept[:-1]).strip() in note
        wide = format_snapshot(snapshot, 200)
        assert wide.endswith(f"| {note}")
        assert "380 safe, 12 unsafe, 5 undet, 3 error" in wide


def test_a_worker_snapshot_is_read_under_the_strict_policy() -> None:
    """A worker's progress file is read like every other file: a repeated key or a NaN
    is refused (the poller then skips the file), a good one reads back."""
    import pytest

    from rampart.pytest_plugin._progress import _strict

    snapshot = Snapshot(key="gw0:t.py::g", name="g", n=3, done=1, safe=1)
    text = json.dumps(snapshot.to_json())
    assert Snapshot.from_json(_strict(text)) == snapshot
    for bad, why in (('{"n": 1, "n": 2}', "duplicate key"), ('{"elapsed": NaN}', "finite")):
        with pytest.raises(ValueError, match=why):
            _strict(bad)
