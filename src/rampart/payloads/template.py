"""Compatibility path (RAMPART's ``rampart.payloads.template``): ``PayloadTemplate``."""

from rampart.payloads._template import PayloadTemplate

__all__ = ["PayloadTemplate"]
