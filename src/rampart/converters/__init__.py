"""Payload converters: encodings, look-alikes, hidden text and rendered documents.

Each converter takes a ``Payload`` and returns a new one with the same ``id``, its
metadata carried forward and its own name recorded (``metadata["converter"]``, and
the whole chain in ``metadata["converters"]``). Text converters refuse binary
payloads with a ``ValueError``. ``ConverterChain`` composes them. See
``docs/payloads.md``.

* ``Base64Converter``, ``Rot13Converter``, ``LeetspeakConverter``: encodings;
* ``UnicodeConfusableConverter``, ``InvisibleTextConverter``: Unicode tricks;
* ``HiddenTextConverter``: an HTML or Markdown document with the payload hidden;
* ``DocxConverter``: a real ``.docx`` file (needs the ``docx`` extra).
"""

from rampart.converters._chain import ConverterChain
from rampart.converters._docx import DocxConverter
from rampart.converters._encodings import Base64Converter, LeetspeakConverter, Rot13Converter
from rampart.converters._hidden import HiddenTextConverter
from rampart.converters._unicode import InvisibleTextConverter, UnicodeConfusableConverter
from rampart.core.converter import PayloadConverter

__all__ = [
    "Base64Converter",
    "ConverterChain",
    "DocxConverter",
    "HiddenTextConverter",
    "InvisibleTextConverter",
    "LeetspeakConverter",
    "PayloadConverter",
    "Rot13Converter",
    "UnicodeConfusableConverter",
]
