"""Compatibility path (RAMPART's ``rampart.converters.rot13``): ``Rot13Converter``."""

from rampart.converters._encodings import Rot13Converter

__all__ = ["Rot13Converter"]
