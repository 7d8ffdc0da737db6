"""rampart's pytest plugin (auto-registered through the ``pytest11`` entry point)."""
