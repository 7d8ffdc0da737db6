"""Compatibility path (RAMPART's ``rampart.drivers.static``): ``StaticDriver``."""

from rampart.drivers._static import StaticDriver

__all__ = ["StaticDriver"]
