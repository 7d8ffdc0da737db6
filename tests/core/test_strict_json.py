"""``rampart.codec.parse_strict_json``: the JSON reader under every rampart reader."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rampart.codec import parse_strict_json
from rampart.core.errors import SchemaError
from tests.core.test_serialization import LEAK


def _rejected(text: str) -> str:
    with pytest.raises(SchemaError) as info:
        parse_strict_json(data=text)
    assert type(info.value) is SchemaError
    message = str(info.value)
    assert LEAK not in message
    return message


@pytest.mark.parametrize(
    "text",
    [
        "{}",
        "[]",
        '{"a": [1, -2.5e-300, null, true, {"b": ""}], "": 100000000000000000000}',
        '"\\ud83d\\ude00 caf\\u00e9"',
        '{"a": {"a": {"a": 1}}, "b": [{"a": 1}, {"a": 2}]}',
        "  7  ",
    ],
)
def test_valid_text_parses_like_json(text: str) -> None:
    """Strict JSON reads exactly as the standard parser does."""
    assert parse_strict_json(data=text) == json.loads(text)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"a": 1, "a": 2}', "$[<key #1>]: duplicate key"),
        ('{"a": 1, "a": 1}', "$[<key #1>]: duplicate key"),
        ('[{"x": 1}, {"y": 1, "z": 0, "y": 2}]', "$[1][<key #2>]: duplicate key"),
        (f'{{"ok": {{"{LEAK}": 1, "{LEAK}": 2}}}}', "$[<key #0>][<key #1>]: duplicate key"),
        ('{"a": {"b": 1, "b": 2}, "a": 3}', "$[<key #1>]: duplicate key"),
    ],
)
def test_duplicate_keys_are_rejected(text: str, message: str) -> None:
    """Which duplicate wins is parser-dependent, so none does; keys appear by position."""
    assert _rejected(text).startswith(message)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"x": NaN}', "$: expected finite JSON numbers"),
        ("[1e999]", "$: expected finite JSON numbers"),
        ("[-Infinity]", "$: expected finite JSON numbers"),
        (f'["ok", {{"{LEAK}": "\\udc00"}}]', "$[1][<key #0>]: expected a string of Unicode"),
        (f'{{"{LEAK}\\ud800": 1}}', "$[<key #0>]: expected keys of Unicode scalar values"),
        ('{"a": 1,}', "$: expected JSON text"),
    ],
)
def test_other_text_rules(text: str, message: str) -> None:
    """Finite numbers and Unicode scalar strings, as the record reader requires."""
    assert _rejected(text).startswith(message)


@pytest.mark.parametrize("data", [b"{}", None, {"a": 1}])
def test_only_str_is_json_text(data: Any) -> None:
    """Bytes or parsed values are refused without echoing them."""
    with pytest.raises(SchemaError, match=r"^data: expected JSON text as a str"):
        parse_strict_json(data=data)


def test_deep_nesting_is_a_schema_error() -> None:
    """Nesting deeper than the interpreter can parse is a SchemaError, not a crash."""
    with pytest.raises(SchemaError, match="too deep"):
        parse_strict_json(data="[" * 100_000 + "]" * 100_000)


def test_deep_nesting_with_a_duplicate_is_a_schema_error() -> None:
    """Text the parser reads but the locating walk cannot descend fails cleanly too."""
    depth = 700
    text = '{"a":' * depth + '{"b":1,"b":2}' + "}" * depth
    with pytest.raises(SchemaError, match="too deep"):
        parse_strict_json(data=text)


_JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(alphabet='[]{}"\\ab\u2028'),
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(st.text(alphabet='[]{}"\\ab', max_size=4), children, max_size=4)
    ),
    max_leaves=30,
)


def _depth(value: object) -> int:
    if isinstance(value, list):
        return 1 + max(map(_depth, value), default=0)
    if isinstance(value, dict):
        return 1 + max(map(_depth, value.values()), default=0)
    return 0


@given(_JSON_VALUES, st.booleans())
def test_nesting_depth_counts_brackets_outside_strings(value: object, ascii_only: bool) -> None:
    """The depth check before parsing agrees with a walk of the parsed value, whatever
    the strings hold: a limit of exactly that depth reads the text, one less refuses it."""
    text = json.dumps(value, ensure_ascii=ascii_only)
    depth = _depth(value)
    assert parse_strict_json(data=text, max_depth=depth) == value
    if depth:
        assert f"more than {depth - 1} levels" in _rejected_with(text, max_depth=depth - 1)


@pytest.mark.parametrize(("depth", "accepted"), [(128, True), (129, False)])
def test_the_depth_limit_is_checked_on_the_text(depth: int, accepted: bool) -> None:
    """128 levels are read; 129 are refused before parsing, naming the limit."""
    text = "[" * depth + '"]]]"' + "]" * depth
    if accepted:
        assert _depth(parse_strict_json(data=text)) == depth
    else:
        assert "more than 128 levels" in _rejected(text)
    assert parse_strict_json(data=text, max_depth=depth + 5) is not None


def test_the_size_limit() -> None:
    """A text longer than max_chars is refused before parsing."""
    assert parse_strict_json(data="[1, 2]", max_chars=6) == [1, 2]
    assert _rejected_with("[1, 2] ", max_chars=6) == (
        "$: JSON text is too long (more than 6 characters)"
    )


def _rejected_with(text: str, **limits: int) -> str:
    with pytest.raises(SchemaError) as info:
        parse_strict_json(data=text, **limits)
    return str(info.value)
