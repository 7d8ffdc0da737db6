"""Helpers shared across rampart, at the paths RAMPART code imports them from.

``rampart.common.text`` holds the text sanitizers (``strip_ansi``, ``safe_str``,
``safe_str_list``, ``safe_float``); ``rampart.common.deprecation`` the deprecation
warning helper. Both are small and import nothing heavy.
"""

__all__: list[str] = []
