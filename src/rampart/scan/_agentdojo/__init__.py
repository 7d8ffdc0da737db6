"""The AgentDojo scan's test module, ``_scan_suite`` (its own folder so the scan's test
ids stay ``_scan_suite.py::test_agentdojo[...]``, as they were before the scans moved
together: pytest names a test by its file, relative to the scan's root, this folder)."""
