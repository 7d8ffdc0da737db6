"""rampart's version, in a module of its own so any layer can read it without
importing the top-level package (``rampart.__version__`` re-exports it)."""

__all__ = ["__version__"]

__version__ = "0.2.0.dev0"
