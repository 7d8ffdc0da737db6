"""Compatibility path (RAMPART's ``rampart.converters.docx``): ``DocxConverter``."""

from rampart.converters._docx import DocxConverter

__all__ = ["DocxConverter"]
