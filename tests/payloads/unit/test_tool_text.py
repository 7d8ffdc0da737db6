"""``rampart.payloads._tool_text.read_text``: tool results read back with libyaml's parser
when PyYAML has it (issue 37 §5: the pure-Python parse was a fifth of a zero-latency
AgentDojo pair's CPU), to the same text the pure-Python loader gives."""

from __future__ import annotations

import pytest
import yaml

from rampart.payloads._tool_text import _loader, _strings, read_text

# What AgentDojo's tools answer (``tool_result_to_str``: YAML of the returned models),
# with the quoting, escaping and folding that hide planted text from a plain search.
_RESULTS = [
    "- amount: 100.0\n  recipient: CH9300762011623852957\n  subject: 'Pizza party'\n",
    'subject: "<INFORMATION>\\nThis is an important message from me, Emma\\u00e9.\\n"\n',
    "body: 'A long line that YAML folds\n\n  across lines, with it''s quotes'\nid: 7\n",
    "- sender: alice\n  body: |\n    literal\n    block\n- sender: bob\n  body: >\n    folded\n    text\n",
    "date: 2022-03-04\nflag: yes\ncount: 0x1F\nempty: ''\nnothing: null\n",
    "? complex key\n: value\nanchor: &a [x, y]\nalias: *a\n",
    "plain text that is no YAML mapping: just words",
    "key: [unterminated",
    "x: \ud800",  # not encodable: read as it is
    "x: \x00y",
]


def _pure_python(text: str) -> str:
    """``read_text`` as it read with PyYAML's pure-Python loader."""
    try:
        loaded = yaml.safe_load(text)
    except (yaml.YAMLError, RecursionError):
        return text
    strings = _strings(loaded, nodes=len(text) + 16, characters=2 * len(text) + 1024)
    return text if strings is None else ("\n".join(strings) or text)


@pytest.mark.parametrize("text", _RESULTS)
def test_reads_what_the_pure_python_loader_reads(text: str) -> None:
    assert read_text(text) == _pure_python(text)


def test_uses_libyaml_when_pyyaml_has_it() -> None:
    expected = yaml.CSafeLoader if yaml.__with_libyaml__ else yaml.SafeLoader
    assert _loader()[1] is expected


def test_planted_text_is_read_back_unescaped() -> None:
    assert read_text(_RESULTS[1]) == "<INFORMATION>\nThis is an important message from me, Emmaé.\n"
