"""``HiddenTextConverter``: a document whose reader sees the carrier text, not the payload.

Agents that read web pages, e-mails or wiki pages see the markup; their users see the
rendering. The converter wraps the payload in a document where it is present but not
displayed, the classic shape of an indirect prompt injection:

* HTML: ``display_none`` (a ``display:none`` block), ``white_text`` (white on white),
  ``tiny_font`` (1-pixel text) or ``comment`` (an HTML comment);
* Markdown: ``comment`` (an HTML comment, invisible once rendered) or ``reference``
  (an unused link reference definition, ``[//]: # "..."``).

The result is an ``HTML`` or ``MARKDOWN`` payload (text formats: the document is the
content) with the same id.
"""

from __future__ import annotations

import html

from rampart._checks import check_instance, invalid
from rampart.converters._base import converted, require_text
from rampart.core.types import Payload, PayloadFormat

__all__ = ["DEFAULT_CARRIER", "HiddenTextConverter"]

DEFAULT_CARRIER = (
    "Quarterly planning notes: the team meets on Thursday to review the roadmap and "
    "the budget for the next release."
)
_TECHNIQUES = {
    PayloadFormat.HTML: ("display_none", "white_text", "tiny_font", "comment"),
    PayloadFormat.MARKDOWN: ("comment", "reference"),
}


def _comment(text: str) -> str:
    # "--" may not appear inside an HTML comment, and "-->" would end it early.
    return "<!-- " + text.replace("--", "- -") + " -->"


def _html(carrier: str, text: str, technique: str) -> str:
    if technique == "comment":
        hidden = _comment(text)
    else:
        style = {
            "display_none": "display:none",
            "white_text": "color:#ffffff;background-color:#ffffff",
            "tiny_font": "font-size:1px;line-height:1px",
        }[technique]
        hidden = f'<div style="{style}">{html.escape(text)}</div>'
    return (
        '<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>Notes</title></head>'
        f"<body>\n<p>{html.escape(carrier)}</p>\n{hidden}\n</body></html>\n"
    )


def _markdown(carrier: str, text: str, technique: str) -> str:
    if technique == "comment":
        hidden = _comment(text)
    else:
        flat = " ".join(text.split()).replace("\\", "\\\\").replace('"', '\\"')
        hidden = f'[//]: # "{flat}"'
    return f"{carrier}\n\n{hidden}\n"


class HiddenTextConverter:
    """Render the payload hidden inside ``carrier`` text (see the module docstring).

    ``format`` is ``PayloadFormat.HTML`` (default) or ``PayloadFormat.MARKDOWN``;
    ``technique`` defaults to ``display_none`` (HTML) or ``comment`` (Markdown).
    """

    def __init__(
        self,
        *,
        format: PayloadFormat = PayloadFormat.HTML,
        technique: str | None = None,
        carrier: str = DEFAULT_CARRIER,
    ) -> None:
        owner = "HiddenTextConverter"
        if not isinstance(format, PayloadFormat) or format not in _TECHNIQUES:
            raise invalid(
                owner,
                "format",
                "PayloadFormat.HTML or PayloadFormat.MARKDOWN",
                format,
                error=ValueError if isinstance(format, PayloadFormat) else TypeError,
            )
        techniques = _TECHNIQUES[format]
        if technique is None:
            technique = techniques[0]
        if technique not in techniques:
            listed = ", ".join(repr(name) for name in techniques)
            raise invalid(
                owner,
                "technique",
                f"one of {listed} (for {format.value})",
                technique,
                error=ValueError,
            )
        check_instance(owner, "carrier", carrier, str, expected="a str")
        self._format = format
        self._technique = technique
        self._carrier = carrier

    def __repr__(self) -> str:
        return f"HiddenTextConverter(format={self._format.value!r}, technique={self._technique!r})"

    async def convert_async(self, *, payload: Payload) -> Payload:
        source = require_text("HiddenTextConverter", payload)
        render = _html if self._format is PayloadFormat.HTML else _markdown
        return converted(
            source,
            name="HiddenTextConverter",
            content=render(self._carrier, source.content, self._technique),
            format=self._format,
            extra={"hidden_technique": self._technique},
        )
