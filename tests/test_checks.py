"""``rampart._checks``: one message format for every rejected argument."""

from __future__ import annotations

import ast
import math
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from rampart import _checks as checks
from rampart.core._protocols import check_driver, check_evaluator

if TYPE_CHECKING:
    from collections.abc import Iterator

SRC = Path(__file__).resolve().parent.parent / "src" / "rampart"

# Messages RAMPART documents word for word for a rule across fields; kept as they are.
RAMPART_WORDED = (
    "Request must include at least a prompt or attachments.",
    "carries its content inline, so artifact must be None",
)


class TestMessageFormat:
    def test_format(self) -> None:
        """'{owner}: {name} must be {expected}, got {value!r}'."""
        assert checks.message("Owner", "arg", "a thing", [1]) == (
            "Owner: arg must be a thing, got [1]"
        )

    def test_wrong_type_is_type_error_out_of_range_is_value_error(self) -> None:
        """The type decides the exception class; the message format stays the same."""
        with pytest.raises(TypeError, match=r"^O: n must be an integer >= 1, got 'x'$"):
            checks.check_int("O", "n", "x", minimum=1)
        with pytest.raises(ValueError, match=r"^O: n must be >= 1, got 0$"):
            checks.check_int("O", "n", 0, minimum=1)

    def test_rampart_words_for_a_negative_turn_budget(self) -> None:
        """RAMPART says 'max_turns must be non-negative'; so do we."""
        with pytest.raises(ValueError, match="max_turns must be non-negative"):
            checks.check_int("XPIAExecution", "max_turns", -1, minimum=0)
        with pytest.raises(TypeError, match="max_turns must be a non-negative integer"):
            checks.check_int("XPIAExecution", "max_turns", 1.5, minimum=0)

    def test_long_values_are_cut(self) -> None:
        """A huge value does not flood the message."""
        text = checks.message("O", "x", "short", "a" * 10_000)
        assert len(text) < 200
        assert text.endswith("...")

    def test_unprintable_values(self) -> None:
        """A value whose repr raises is still reported, by its type."""

        class Broken:
            def __repr__(self) -> str:
                raise RuntimeError("no repr")

        assert checks.message("O", "x", "y", Broken()) == "O: x must be y, got <unprintable Broken>"

    def test_secret_values_are_never_shown(self) -> None:
        """A secret shows only its type."""
        with pytest.raises(ValueError, match="api_key") as caught:
            checks.check_text("Adapter", "api_key", "   ", secret=True)
        assert (
            str(caught.value) == "Adapter: api_key must be a non-empty string, got <str, not shown>"
        )

    def test_a_class_gets_a_hint(self) -> None:
        """Passing a class where an instance belongs suggests calling it."""

        class Judge:
            async def evaluate_async(self) -> None: ...

        with pytest.raises(
            TypeError, match=r"got the class .*Judge \(did you forget to call it\?\)$"
        ):
            check_evaluator("Probes.behavior", "evaluator", Judge)

    def test_shown_replaces_the_value(self) -> None:
        """A caller can show a redacted form of the value."""
        error = checks.invalid("R", "url", "a redis URL", "x://u:pw@h", shown="'x://u:***@h'")
        assert str(error) == "R: url must be a redis URL, got 'x://u:***@h'"
        assert "pw" not in str(error)


class TestNumbers:
    @pytest.mark.parametrize("value", [True, False, "1", None, [1]])
    def test_bools_and_others_are_not_numbers(self, value: object) -> None:
        """Bools are never numbers, and nothing is coerced."""
        with pytest.raises(TypeError, match=r"^O: x must be a finite number >= 0, got "):
            checks.check_number("O", "x", value, minimum=0)

    @pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
    def test_non_finite_is_a_value_error(self, value: float) -> None:
        """NaN and infinities are out of range."""
        with pytest.raises(ValueError, match=r"^O: x must be a finite number, got "):
            checks.check_number("O", "x", value)

    @pytest.mark.parametrize(
        ("bounds", "text"),
        [
            ({"minimum": 0}, ">= 0"),
            ({"above": 0}, "> 0"),
            ({"minimum": 0, "maximum": 1}, "in [0, 1]"),
            ({"above": 0, "below": 1}, "in (0, 1)"),
            ({"maximum": 5}, "<= 5"),
        ],
    )
    def test_bounds_are_spelled_out(self, bounds: dict[str, float], text: str) -> None:
        """The expectation states the bounds, inclusive or not."""
        with pytest.raises(ValueError, match=r"^O: x must be ") as caught:
            checks.check_number(
                "O", "x", 99 if "maximum" in bounds or "below" in bounds else -1, **bounds
            )  # type: ignore[arg-type]
        assert f"must be a finite number {text}, got" in str(caught.value)

    def test_numbers_come_back_as_float(self) -> None:
        """An int is accepted and normalised."""
        value = checks.check_seconds("O", "timeout", 2, positive=True)
        assert (value, type(value)) == (2.0, float)

    def test_optional_allows_none_and_says_so(self) -> None:
        """The optional form accepts None and mentions it when rejecting."""
        assert checks.check_optional_seconds("O", "timeout", None) is None
        with pytest.raises(TypeError, match=r"^O: timeout must be .* or None, got 'x'$"):
            checks.check_optional_seconds("O", "timeout", "x")

    def test_probability(self) -> None:
        """A probability is a number in [0, 1]."""
        assert checks.check_probability("O", "p", 1) == 1.0
        with pytest.raises(ValueError, match=r"^O: p must be a number in \[0, 1\], got 1\.5$"):
            checks.check_probability("O", "p", 1.5)


class TestOthers:
    def test_int_range(self) -> None:
        """Both bounds are named together."""
        with pytest.raises(ValueError, match=r"^serve: port must be in \[0, 65535\], got 70000$"):
            checks.check_int("serve", "port", 70000, minimum=0, maximum=65535)

    def test_optional_int(self) -> None:
        """None passes; a wrong type names the None option."""
        assert checks.check_optional_int("O", "n", None, minimum=1) is None
        with pytest.raises(TypeError, match=r"^O: n must be an integer >= 1 or None, got 2\.0$"):
            checks.check_optional_int("O", "n", 2.0, minimum=1)

    def test_text(self) -> None:
        """Blank strings are values out of range; non-strings are type errors."""
        assert checks.check_text("O", "name", "x") == "x"
        with pytest.raises(ValueError, match=r"^O: name must be a non-empty string, got ' '$"):
            checks.check_text("O", "name", " ")
        with pytest.raises(TypeError, match=r"^O: name must be a non-empty string, got 3$"):
            checks.check_text("O", "name", 3)

    def test_bool(self) -> None:
        """0 and 1 are not bools."""
        with pytest.raises(TypeError, match=r"^O: flag must be a bool, got 1$"):
            checks.check_bool("O", "flag", 1)

    def test_choice(self) -> None:
        """A value outside the choices lists them."""
        with pytest.raises(ValueError, match=r"^O: b must be one of 'x', 'y', got 'z'$"):
            checks.check_choice("O", "b", "z", ("x", "y"))

    def test_items_are_named_by_index(self) -> None:
        """A bad item in a list is reported as name[i]."""

        def positive(name: str, value: object) -> int:
            return checks.check_int("O", name, value, minimum=1)

        assert checks.check_items("O", "xs", (1, 2), positive, expected="a list") == [1, 2]
        with pytest.raises(ValueError, match=r"^O: xs\[1\] must be >= 1, got 0$"):
            checks.check_items("O", "xs", [1, 0], positive, expected="a list")
        with pytest.raises(TypeError, match=r"^O: xs must be a list, got 5$"):
            checks.check_items("O", "xs", 5, positive, expected="a list")

    def test_path(self, tmp_path: Path) -> None:
        """A path is a non-empty str or PathLike, returned as Path."""
        assert checks.check_path("O", "dir", str(tmp_path)) == tmp_path
        with pytest.raises(ValueError, match=r"^O: dir must be a non-empty path"):
            checks.check_path("O", "dir", "")
        with pytest.raises(TypeError, match=r"^O: dir must be a non-empty path .*, got 3$"):
            checks.check_path("O", "dir", 3)

    @pytest.mark.parametrize("name", ["", ".", "..", "a/b", "a\x00b"])
    def test_filename(self, name: str) -> None:
        """A file name has no directory part."""
        with pytest.raises(ValueError, match=r"^O: filename must be a bare file name"):
            checks.check_filename("O", "filename", name)

    def test_method_checks_reject_classes_and_other_objects(self) -> None:
        """The protocol checks want an instance with the method."""

        class Driver:
            async def next_prompt_async(self) -> None: ...

        driver = Driver()
        assert check_driver("O", "driver", driver) is driver
        with pytest.raises(TypeError, match=r"^O: driver must be a PromptDriver .*, got 3$"):
            check_driver("O", "driver", 3)
        with pytest.raises(TypeError, match=r"^O: evaluator must be an Evaluator"):
            check_evaluator("O", "evaluator", driver)


def _hand_written_argument_errors() -> Iterator[str]:
    """``raise TypeError/ValueError/UsageError("... must be ...")`` outside ``_checks``."""
    for path in sorted(SRC.rglob("*.py")):
        if path == SRC / "_checks.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not (isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call)):
                continue
            func = node.exc.func
            name = getattr(func, "id", getattr(func, "attr", ""))
            if name not in {"TypeError", "ValueError", "UsageError"}:
                continue
            text = "".join(
                part.value
                for part in ast.walk(node.exc)
                if isinstance(part, ast.Constant) and isinstance(part.value, str)
            )
            if "must be" in text and not any(words in text for words in RAMPART_WORDED):
                yield f"{path.relative_to(SRC)}:{node.lineno}"


def test_argument_messages_come_from_one_module() -> None:
    """No module writes its own "... must be ..." message: they all use rampart._checks."""
    assert list(_hand_written_argument_errors()) == []
