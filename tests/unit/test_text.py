"""Text sanitizers: escape sequences and control characters never reach a terminal."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rampart._text import escape_hidden_json, one_line, reveal_hidden_json, safe_str, strip_ansi
from tests.reporting.test_hidden_characters import HIDDEN, NODE, TEXT


class TestStripAnsi:
    @pytest.mark.parametrize(
        ("text", "expected"),
        [
            ("\x1b[31mred\x1b[0m", "red"),
            ("\x1b[1;38;5;196mbold\x1b[m", "bold"),
            ("\x1b[?25lhidden cursor", "hidden cursor"),
            ("\x1b[2 qcursor shape", "cursor shape"),  # CSI with an intermediate byte
            ("\x9b31mred\x9b0m", "red"),  # 8-bit CSI
        ],
    )
    def test_csi(self, text: str, expected: str) -> None:
        """CSI sequences, 7-bit and 8-bit, with parameters and intermediates, vanish."""
        assert strip_ansi(text) == expected

    @pytest.mark.parametrize(
        ("text", "expected"),
        [
            ("\x1b]0;window title\x07after", "after"),  # OSC ended by BEL
            ("\x1b]0;window title\x1b\\after", "after"),  # OSC ended by 7-bit ST
            ("\x1b]8;;https://evil.example\x1b\\click\x1b]8;;\x1b\\", "click"),  # hyperlink
            ("\x9d0;title\x9cafter", "after"),  # 8-bit OSC and ST
            ("\x1b]52;c;Y29weQ==\x07x", "x"),  # clipboard write
            ("\x1bPq#0;2;0;0;0#0~~\x1b\\after", "after"),  # DCS (sixel)
            ("\x90dcs body\x9cafter", "after"),  # 8-bit DCS
            ("\x1bXsos\x1b\\a", "a"),  # SOS
            ("\x1b^pm\x1b\\a", "a"),  # PM
            ("\x1b_apc\x1b\\a", "a"),  # APC
            ("\x9fapc\x9ca", "a"),  # 8-bit APC
        ],
    )
    def test_control_strings(self, text: str, expected: str) -> None:
        """OSC/DCS/SOS/PM/APC strings are removed with their payload up to ST or BEL."""
        assert strip_ansi(text) == expected

    @pytest.mark.parametrize(
        ("text", "expected"),
        [
            ("\x1b(Bcharset", "charset"),  # nF: designate G0
            ("\x1b#8align", "align"),  # nF: DEC screen alignment
            ("\x1b %Gutf8", "utf8"),  # nF with two intermediates
            ("\x1bcreset", "reset"),  # Fs: full reset
            ("\x1b7save\x1b8", "save"),  # Fp: save/restore cursor
            ("\x1bMup", "up"),  # Fe: reverse index
        ],
    )
    def test_other_escapes(self, text: str, expected: str) -> None:
        """nF escapes and two-byte ESC sequences are removed whole, not just their ESC."""
        assert strip_ansi(text) == expected

    def test_controls_removed_except_tab_newline_return(self) -> None:
        """C0, DEL and C1 controls go; tab, newline and carriage return stay."""
        text = "a\x00b\x07c\x08d\x0be\x0cf\x1bég\x7fh\x85i\x9fj\tk\nl\rm"
        assert strip_ansi(text) == "abcdeféghij\tk\nl\rm"

    def test_unterminated_string_leaves_inert_text(self) -> None:
        """An unterminated OSC loses its introducer; what follows stays, free of controls."""
        assert strip_ansi("ok \x1b]0;no end") == "ok 0;no end"

    def test_plain_and_unicode_text_unchanged(self) -> None:
        """Ordinary text, including non-ASCII and brackets, is left alone."""
        text = "naïve [brackets] ✓ 日本語 – done"
        assert strip_ansi(text) == text

    def test_nested_and_adjacent_sequences(self) -> None:
        """A doubled ESC and back-to-back sequences leave no control behind."""
        assert strip_ansi("\x1b\x1b[31mx\x1b[0m\x1b[1m\x1b]0;t\x07y") == "xy"

    @pytest.mark.parametrize(
        "text",
        ["\x1b]" * 200_000, "\x9d" * 200_000, "\x1bP" + "\x1b]" * 200_000, "\x9da" * 200_000],
        ids=["osc-introducers", "8-bit-osc", "dcs-then-osc", "8-bit-osc-text"],
    )
    def test_unterminated_introducers_take_linear_time(self, text: str) -> None:
        """A body of unterminated control-string introducers is scanned once.

        With a lazy ``.*?`` body each introducer scanned to the end of the text:
        ``"\\x1b]" * 20000`` took 27 s, so 200,000 would not finish in this run.
        """
        cleaned = strip_ansi(text)
        assert "\x1b" not in cleaned
        assert not any("\x80" <= character <= "\x9f" for character in cleaned)

    def test_a_control_string_ends_at_the_next_escape(self) -> None:
        """An ESC inside a control string that is not its ST ends the match there;
        the pieces are removed by the other passes and only inert text stays."""
        assert strip_ansi("a\x1b]0;title\x1b[31mred\x07b") == "a0;titleredb"

    def test_rejects_non_str(self) -> None:
        """A non-string argument is a usage error naming the argument."""
        with pytest.raises(TypeError, match="text must be a str"):
            strip_ansi(b"\x1b[31m")  # type: ignore[arg-type]


class TestSafeStr:
    def test_str_passthrough(self) -> None:
        """A string comes back unchanged."""
        assert safe_str("hello") == "hello"

    def test_other_values_use_str(self) -> None:
        """Non-string values are rendered with ``str``."""
        assert safe_str(3.5) == "3.5"
        assert safe_str(None) == "None"

    def test_raising_str_gives_placeholder(self) -> None:
        """An object whose ``__str__`` raises renders as a placeholder instead of raising."""

        class Broken:
            def __str__(self) -> str:
                raise RuntimeError("boom")

        assert safe_str(Broken()) == "<unprintable value>"

    def test_str_returning_non_str_gives_placeholder(self) -> None:
        """A ``__str__`` that returns a non-string (a TypeError in ``str``) is also caught."""

        class Weird:
            def __str__(self) -> str:
                return 42  # type: ignore[return-value]

        assert safe_str(Weird()) == "<unprintable value>"


class TestOneLine:
    def test_collapses_line_breaks_and_tabs(self) -> None:
        """Each run of newlines, carriage returns and tabs becomes one space."""
        assert one_line("first\r\n\nsecond\t\tthird\u2028fourth") == "first second third fourth"

    def test_strips_escapes_and_trims(self) -> None:
        """Escapes are removed and the ends are trimmed."""
        assert one_line("\n\x1b[31mred alert\x1b[0m\n") == "red alert"


class TestOneLineLimit:
    def test_cuts_before_cleaning_and_caps_the_result(self) -> None:
        """``limit`` bounds both the work and the output, whatever the text."""
        assert one_line("\x1b]" * 400_000, limit=100) == ""
        text = one_line("ab\ncd" * 100_000, limit=11)
        assert text == "ab cdab cda"
        assert one_line("  x  ", limit=10) == "x"

    def test_without_limit_nothing_is_cut(self) -> None:
        assert one_line("a" * 5000) == "a" * 5000


class TestStripAnsiProperties:
    @given(st.text(alphabet=st.characters(max_codepoint=0x2FF)))
    def test_output_has_no_controls_and_is_stable(self, text: str) -> None:
        """For any text, no control but tab/newline/return survives, and a rerun changes nothing."""
        cleaned = strip_ansi(text)
        assert not any(
            (ord(ch) < 0x20 and ch not in "\t\n\r") or 0x7F <= ord(ch) <= 0x9F for ch in cleaned
        )
        assert strip_ansi(cleaned) == cleaned

    @given(st.text(alphabet=st.characters(max_codepoint=0x2FF)))
    def test_one_line_is_single_line(self, text: str) -> None:
        """one_line never returns a line break or tab."""
        assert not set(one_line(text)) & set("\t\n\r\u2028\u2029")


def test_one_line_drops_bidi_overrides() -> None:
    """A summary cannot reorder its terminal line with bidi controls or hide text with ZWSP."""
    from rampart._text import one_line

    assert one_line("safe\u202e FAIL\u202c ok\u2066x\u2069\u200b") == "safe FAIL okx"


def test_escape_hidden_json_is_lossless() -> None:
    """Escaped JSON decodes to exactly the same value; ASCII text is returned as is."""
    value = {"a": TEXT, NODE: ["\x7f", "\x85", "\ufeff"]}
    text = json.dumps(value, ensure_ascii=False)
    escaped = escape_hidden_json(text)
    assert [char for char in HIDDEN if char in escaped] == []
    assert "\x7f" not in escaped
    assert json.loads(escaped) == value
    assert escape_hidden_json('{"a": "plain"}') == '{"a": "plain"}'
    assert json.loads(reveal_hidden_json(text))["a"] == "ok [U+202E]gnp.exe[U+009B]2J [U+200B]end"
