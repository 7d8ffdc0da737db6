"""The one redaction policy: credentials never leave the process in text rampart renders.

:func:`redact` applies three rules to a string, in this order:

1. **Known secret values** become ``[REDACTED]`` wherever they occur. They are the
   values in the process-wide registry (:func:`register_secret`) plus any ``extra``
   values the caller passes for one text (the credentials of the endpoint that
   answered). Each value is also matched in its percent-encoded and JSON-escaped
   spellings; a header value
   such as ``Bearer sk-...`` or ``Basic <base64>`` registers its credential part (and
   a Basic pair its password too).
2. **URL user info**: ``scheme://user:password@host`` becomes ``scheme://user:***@host``,
   and ``scheme://token@host`` (user info without a password) ``scheme://***@host``.
3. **Password-like query parameters**: in ``?name=value``, ``&name=value`` or
   ``;name=value`` the value becomes ``***`` when the name, lower-cased with ``-`` read
   as ``_``, is in :data:`SECRET_PARAMETERS` or ends in ``token``, ``secret``,
   ``password``, ``passwd``, ``signature``, ``apikey``, ``_key`` or ``_sig``.

:func:`redact_data` applies :func:`redact` to every string (and every key) of a
JSON-ready value; :func:`may_need_redaction` tells, cheaply, whether a JSON document
needs that walk at all.

**The registry** holds known secret values: configured credentials register themselves
(``ChatCompletionsAdapter``'s ``api_key``, its secret headers and the password in its
``base_url``; ``LLMConfig.api_key``; a ``RedisBackend`` URL's password), and users
add others with ``rampart.register_secret``. It is bounded (:data:`MAX_SECRETS`
values; the least recently registered is forgotten first), thread-safe (one lock for
writers; readers use an immutable snapshot), and never serialized (it refuses to be
pickled, and no model object refers to it). Each process has its own: an xdist
worker registers what it configures and redacts everything before it reaches the
controller. Values shorter than :data:`MIN_SECRET_LENGTH` characters are not
registered, since replacing every ``"a"`` would destroy the text and so short a
secret cannot be told from ordinary words; as ``extra`` (one endpoint's answer) such
a value is still replaced where it stands as a whole word.

**Where it is applied** -- every boundary that renders text, and nowhere else with a
pattern of its own:

* summaries: :func:`safe_summary`, for every summary a strategy writes and the
  execution error boundary's (ERROR ``summary``; ``metadata["error"]`` is redacted);
* exception messages rampart raises about endpoints: the HTTP exchange
  (``rampart.adapters._http``), ``RedisBackend``, argument errors that show a URL;
* metadata: limiter and LLM statistics;
* reports: every serialized record (``serialize_record``: the JSONL trace, the JSON
  report and the xdist transport) and the whole JSON report document;
* terminal: the plugin's summary lines, warnings and trial-group failure messages;
* logs: rampart's log calls.

:class:`Secret` and :class:`Masked` are ``str`` subclasses whose ``repr()`` hides the
value (entirely, or by this policy), for values that sit in variables a traceback may
print (pytest shows the arguments of the innermost frame, and every local with
``--showlocals``).

Only the standard library and the base layer's ``rampart._checks`` / ``rampart._text``
are imported, so any layer may use this module.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import threading
from collections import OrderedDict
from typing import TYPE_CHECKING, Any, NoReturn
from urllib.parse import parse_qsl, quote, quote_plus, unquote, urlsplit

from rampart._checks import invalid
from rampart._text import terminal_safe

if TYPE_CHECKING:
    from collections.abc import Iterable

__all__ = [
    "MASK",
    "MAX_SECRETS",
    "MIN_SECRET_LENGTH",
    "REDACTED",
    "SECRET_HEADERS",
    "SECRET_PARAMETERS",
    "Masked",
    "Secret",
    "SecretRegistry",
    "header_secrets",
    "is_secret_header",
    "is_secret_parameter",
    "mask_secrets",
    "may_need_redaction",
    "redact",
    "redact_data",
    "register_header_secret",
    "register_secret",
    "register_url_secrets",
    "safe_summary",
]

REDACTED = "[REDACTED]"
"""What a known secret value is replaced with."""

MASK = "***"
"""What URL user info and password-like query values are replaced with."""

MIN_SECRET_LENGTH = 6
"""Registered values shorter than this are ignored (see the module docstring)."""

MAX_SECRETS = 1024
"""How many distinct values the registry keeps; the least recently registered go first."""

SECRET_HEADERS = frozenset(
    {
        "api-key",
        "authorization",
        "cookie",
        "ocp-apim-subscription-key",
        "proxy-authorization",
        "x-api-key",
        "x-auth-token",
    }
)
"""Header names (lower case) whose values are secret without being marked."""

SECRET_PARAMETERS = frozenset(
    {
        "access_token",
        "api_key",
        "apikey",
        "auth",
        "authorization",
        "client_secret",
        "code",
        "credential",
        "credentials",
        "key",
        "pass",
        "passwd",
        "password",
        "pwd",
        "secret",
        "sig",
        "signature",
        "token",
    }
)
"""Query parameter names (lower case, ``-`` read as ``_``) whose values are masked."""

_SECRET_SUFFIXES = (
    "token",
    "secret",
    "password",
    "passwd",
    "signature",
    "apikey",
    "_key",
    "_sig",
)

# 2. ://userinfo@ -- the user info runs to the last "@" before the path, query,
# fragment or whitespace (a password may hold an unencoded "@"). Anchored on "://"
# (a literal the engine finds fast), not on the scheme, which would be tried at
# every letter of a long text.
_USER_INFO = re.compile(r"://(?P<info>[^\s/?#]*)@")
# 3. a query parameter; the value stops at the next separator, whitespace or quote.
_PARAMETER = re.compile(r"(?P<lead>[?&;])(?P<name>[A-Za-z0-9_.\-\[\]]+)=(?P<value>[^\s&#;'\"<>]*)")
_WORD = "A-Za-z0-9"


def is_secret_parameter(name: str) -> bool:
    """Whether a query parameter called ``name`` carries a credential (rule 3)."""
    normal = name.lower().replace("-", "_")
    return normal in SECRET_PARAMETERS or normal.endswith(_SECRET_SUFFIXES)


def is_secret_header(name: str, marked: Iterable[str] = ()) -> bool:
    """Whether header ``name`` is secret: a default one, or one of ``marked`` (any case)."""
    lower = name.lower()
    return lower in SECRET_HEADERS or any(lower == item.lower() for item in marked)


_PERCENT_ESCAPE = re.compile(r"%[0-9A-F]{2}")


def _forms(value: str) -> set[str]:
    """``value``, its percent-encoded spellings and its spellings inside JSON strings.

    Percent-encoded: by ``quote`` and ``quote_plus``, with ``/`` escaped or kept (the
    default of ``quote``), each in upper- and lower-case hex.
    """
    encoded = {
        quote(value, safe=""),
        quote(value),
        quote_plus(value, safe=""),
        quote_plus(value),
    }
    encoded |= {_PERCENT_ESCAPE.sub(lambda match: match[0].lower(), form) for form in encoded}
    return {
        value,
        *encoded,
        json.dumps(value, ensure_ascii=False)[1:-1],
        json.dumps(value)[1:-1],
    }


def _longest_first(values: Iterable[str]) -> tuple[str, ...]:
    # Longest first, so a value that contains another is replaced whole.
    return tuple(sorted(values, key=lambda value: (-len(value), value)))


def _replace_all(text: str, values: tuple[str, ...]) -> str:
    # One substring search per value: for the few secrets a run has, faster than a
    # regular expression alternation, which CPython tries branch by branch.
    for value in values:
        if value in text:
            text = text.replace(value, REDACTED)
    return text


class SecretRegistry:
    """Known secret values: bounded, thread-safe, never serialized (module docstring)."""

    __slots__ = ("_limit", "_lock", "_snapshot", "_values")

    def __init__(self, *, limit: int = MAX_SECRETS) -> None:
        self._limit = limit
        self._lock = threading.Lock()
        self._values: OrderedDict[str, None] = OrderedDict()
        self._snapshot: tuple[str, ...] = ()

    def __repr__(self) -> str:
        return f"SecretRegistry({len(self._values)} values, not shown)"

    def __reduce__(self) -> NoReturn:
        raise TypeError("the secret registry is never serialized")

    def __len__(self) -> int:
        return len(self._values)

    def replace(self, text: str) -> str:
        """``text`` with every known value replaced by ``[REDACTED]``."""
        return _replace_all(text, self._snapshot)

    def found_in(self, text: str) -> bool:
        """Whether ``text`` contains a known value."""
        return any(value in text for value in self._snapshot)

    def add(self, value: str) -> None:
        """Remember ``value`` (and its encoded forms); short values are ignored."""
        if len(value) < MIN_SECRET_LENGTH:
            return
        with self._lock:
            changed = False
            for form in _forms(value):
                if form in self._values:
                    self._values.move_to_end(form)
                    continue
                self._values[form] = None
                changed = True
            while len(self._values) > self._limit:
                self._values.popitem(last=False)
                changed = True
            if changed:
                # Readers take this immutable snapshot without the lock.
                self._snapshot = _longest_first(self._values)

    def clear(self) -> None:
        """Forget every value."""
        with self._lock:
            self._values.clear()
            self._snapshot = ()


_REGISTRY = SecretRegistry()


def register_secret(value: str) -> None:
    """Replace ``value`` by ``[REDACTED]`` in everything rampart renders from now on.

    For credentials rampart does not configure itself (a token your adapter sends, a
    password in a surface's connection string). Values shorter than six characters
    are ignored. Registration is per process (each xdist worker registers its own).
    """
    if not isinstance(value, str):
        raise invalid("register_secret", "value", "a str", value, secret=True)
    _REGISTRY.add(value)


def header_secrets(value: str) -> list[str]:
    """The secret parts of a secret header's value: for ``<scheme> <credential>``
    (``Bearer sk-...``) the credential, so a masked echo still names the scheme, plus a
    Basic pair's password; otherwise the whole value."""
    scheme, _, credential = value.strip().partition(" ")
    credential = credential.strip()
    if not credential:
        return [value]
    found = [credential]
    if scheme.lower() == "basic":
        try:
            decoded = base64.b64decode(credential, validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError):
            return found
        found.append(decoded.partition(":")[2])
    return found


def register_header_secret(value: str) -> None:
    """Register the secret parts of a secret header's value (:func:`header_secrets`)."""
    for item in header_secrets(value):
        register_secret(item)


def register_url_secrets(url: str) -> None:
    """Register the credentials a URL carries: its password (or, without one, the user
    name, which is then the token), the Basic pair an HTTP client derives from them,
    and the values of password-like query parameters."""
    try:
        parts = urlsplit(url)
        user, password = parts.username, parts.password
    except ValueError:
        return
    if password is not None:
        register_secret(password)
        register_secret(unquote(password))
        pair = f"{unquote(user or '')}:{unquote(password)}"
        register_secret(base64.b64encode(pair.encode("utf-8")).decode("ascii"))
    elif user:
        register_secret(user)
        register_secret(unquote(user))
    for name, item in parse_qsl(parts.query, keep_blank_values=False):
        if is_secret_parameter(name):
            register_secret(item)


def _mask_user_info(match: re.Match[str]) -> str:
    user, colon, _ = match["info"].partition(":")
    shown = f"{user}:{MASK}" if colon else MASK
    return f"://{shown}@"


def _mask_parameter(match: re.Match[str]) -> str:
    if not match["value"] or not is_secret_parameter(match["name"]):
        return match[0]
    return f"{match['lead']}{match['name']}={MASK}"


def _replace_extra(text: str, extra: Iterable[str]) -> str:
    long: set[str] = set()
    short: set[str] = set()
    for value in extra:
        if not value:
            continue
        if len(value) >= MIN_SECRET_LENGTH:
            long.update(_forms(value))
        else:
            short.add(value)
    text = _replace_all(text, _longest_first(long))
    if short:
        words = "|".join(re.escape(value) for value in _longest_first(short))
        text = re.sub(f"(?<![{_WORD}])(?:{words})(?![{_WORD}])", REDACTED, text)
    return text


def redact(text: str, extra: Iterable[str] = ()) -> str:
    """``text`` with known secrets, URL user info and password-like query values masked.

    ``extra``: further secret values for this text only (the credentials of the
    endpoint whose answer it is); short ones are replaced where they are whole words.
    """
    if not isinstance(text, str):
        raise invalid("redact", "text", "a str", text)
    text = str(text)
    if extra:
        text = _replace_extra(text, extra)
    text = _REGISTRY.replace(text)
    if "@" in text and "://" in text:
        text = _USER_INFO.sub(_mask_user_info, text)
    if "=" in text:
        text = _PARAMETER.sub(_mask_parameter, text)
    return text


def safe_summary(text: str) -> str:
    """A result's summary as rampart records it: terminal-safe (escapes and invisible
    characters dropped, :func:`rampart._text.terminal_safe`), then :func:`redact`-ed.

    The one function for every summary rampart writes (a strategy's verdict summary
    and the execution boundary's ERROR summary): a summary quotes what the agent,
    an evaluator or an exception said, and ``assert result, result.summary`` prints it
    to the terminal and to JUnit.
    """
    return redact(terminal_safe(text))


def mask_secrets(text: str, extra: Iterable[str] = ()) -> str:
    """``text`` with known secret values (and ``extra``) replaced: rule 1 only.

    For a model's reply: an endpoint that echoes its credential must not get it into a
    verdict, a cache entry or a prompt, but URLs and query strings in a reply are
    content (a generated payload's link), so rules 2 and 3 are left to the boundaries.
    """
    if extra:
        text = _replace_extra(text, extra)
    return _REGISTRY.replace(text)


def may_need_redaction(text: str) -> bool:
    """Whether :func:`redact` could change a string that ``text`` contains as JSON.

    A cheap check over a whole JSON document (``json.dumps`` output) before walking
    it: ``False`` means no string in it holds a known secret, URL user info or a
    password-like query parameter. It may answer ``True`` when nothing needs masking.
    """
    if _REGISTRY.found_in(text):
        return True
    if "@" in text and "://" in text and _USER_INFO.search(text):
        return True
    if "=" in text:
        return any(is_secret_parameter(match["name"]) for match in _PARAMETER.finditer(text))
    return False


def redact_data(value: Any) -> Any:
    """``value`` (JSON-ready: dicts, lists, strings, scalars) with every string redacted.

    Keys are redacted too (report metadata is keyed by names users choose). Returns
    new containers; ``value`` is not changed.
    """
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {
            (redact(key) if isinstance(key, str) else key): redact_data(item)
            for key, item in value.items()
        }
    if isinstance(value, list):
        return [redact_data(item) for item in value]
    if isinstance(value, tuple):
        return tuple(redact_data(item) for item in value)
    return value


class Secret(str):
    """A ``str`` whose ``repr()`` hides it, so a secret held in a variable does not show
    up in a traceback (pytest prints the innermost frame's arguments, and every local
    with ``--showlocals``)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "Secret('[REDACTED]')"


class Masked(str):
    """A ``str`` (a URL, a connection string) whose ``repr()`` is redacted by this policy."""

    __slots__ = ()

    def __repr__(self) -> str:
        return repr(redact(str(self)))
