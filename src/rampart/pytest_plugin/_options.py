"""What the plugin's option readers share: a value from the command line, else the ini file.

Each feature module declares its own options (``add_options``, called from the entry
point's one ``pytest_addoption``) and reads them with these helpers, so every bad value
is a usage error in one format that names the option (``--rampart-x`` or ``ini option
rampart_x``) and what was expected. The entry point imports this module: it imports
nothing beyond pytest and ``rampart._checks``.
"""

from __future__ import annotations

import pytest

from rampart._checks import invalid

__all__ = ["GROUP", "add_option", "choice", "group", "option_int", "option_or_ini"]

#: The ``pytest --help`` group every rampart option is listed in.
GROUP = ("rampart", "rampart safety testing")


def group(parser: pytest.Parser) -> pytest.OptionGroup:
    """rampart's option group (``pytest --help``)."""
    return parser.getgroup(*GROUP)


def add_option(
    parser: pytest.Parser,
    dest: str,
    *,
    metavar: str,
    help: str,
    ini: str | None = None,
    **extra: object,
) -> None:
    """``--rampart-x`` (``dest`` ``rampart_x``) in rampart's group; with ``ini``, the ini
    option ``rampart_x`` too, with that help text."""
    group(parser).addoption(
        f"--{dest.replace('_', '-')}", dest=dest, default=None, metavar=metavar, help=help, **extra
    )
    if ini is not None:
        parser.addini(dest, ini, default="")


def option_or_ini(config: pytest.Config, name: str) -> tuple[object, str] | None:
    """``--name`` when given, else the ini option ``name`` when set, with the source to
    name in an error; None when neither is set."""
    value = config.getoption(name, None)
    if value is not None:
        return value, f"--{name.replace('_', '-')}"
    raw = config.getini(name)
    if raw in ("", None):
        return None
    return raw, f"ini option {name}"


def choice(config: pytest.Config, name: str, choices: tuple[str, ...]) -> str:
    """A mode option from the command line, else the ini file; the first choice when unset."""
    found = option_or_ini(config, name)
    value, source = found if found is not None else (choices[0], f"ini option {name}")
    mode = str(value).strip().lower()
    if mode not in choices:
        expected = "one of " + ", ".join(choices)
        raise invalid("rampart", source, expected, value, error=pytest.UsageError)
    return mode


def option_int(
    config: pytest.Config,
    name: str,
    *,
    minimum: int,
    maximum: int | None = None,
    ini: bool = True,
) -> int | None:
    """An integer option from the command line, else (``ini``) the ini file; None when unset."""
    if ini:
        found = option_or_ini(config, name)
    else:
        value = config.getoption(name, None)
        found = None if value is None else (value, f"--{name.replace('_', '-')}")
    if found is None:
        return None
    value, source = found
    expected = f"an integer >= {minimum}"
    if maximum is not None:
        expected = f"an integer from {minimum} to {maximum} (ini rampart_max_trials)"
    try:
        number = int(str(value))
    except ValueError:
        raise invalid("rampart", source, expected, value, error=pytest.UsageError) from None
    if number < minimum or (maximum is not None and number > maximum):
        raise invalid("rampart", source, expected, value, error=pytest.UsageError)
    return number
