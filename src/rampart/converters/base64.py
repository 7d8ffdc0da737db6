"""Compatibility path (RAMPART's ``rampart.converters.base64``): ``Base64Converter``."""

from rampart.converters._encodings import Base64Converter

__all__ = ["Base64Converter"]
