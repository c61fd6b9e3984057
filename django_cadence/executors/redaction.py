"""One redaction for every value a job provides: payloads, outcomes, errors, log lines.

Structured values (:func:`redact`) hide the value of every secret-named key. Free text
(:func:`redact_text`: errors, tracebacks, reprs, reasons) is searched by four pattern
families, each described where it is compiled: PEM private key blocks, credentials in a
URL's user-info, ``key=value`` pairs under a secret name, and bare bearer tokens.

A name is secret when one of the built-in names or ``CADENCE_SECRET_KEYS`` appears in it,
case-insensitively, with ``_``, ``-`` or a space optional between its parts (``api_key``
also names ``apikey``, ``X-Api-Key`` and ``"api key"``). A short name (four characters or
fewer: ``pass``, ``pwd``, ``dsn``, ``auth``) must stand as a whole part of the key
(``db_pass``, ``pwd``), so ``compass`` and ``passengers`` stay visible.

Secret scanners such as ``detect-secrets`` find secrets but do not rewrite text, and
scrubbing libraries target personal data; none covers these written forms, so the
patterns are ours and tested as a table (tests/executors/test_redaction.py).
"""

from __future__ import annotations

import functools
import re
from typing import Any

from ..conf import cadence_settings

REDACTED = "********"
MAX_DEPTH = 32
SHORT_NAME = 4  # names this long or shorter match only as a whole part of a key

PEM_PRIVATE_KEY = re.compile(
    r"(?P<begin>-----BEGIN[A-Z0-9 ]*PRIVATE KEY-----)"
    r"(?P<body>.*?)"
    r"(?P<end>-----END[A-Z0-9 ]*PRIVATE KEY-----|\Z)",
    re.DOTALL,
)
"""A PEM private key block, newlines real or escaped (a repr): the body is hidden, the
armour lines kept. A block cut short is hidden to the end of the text."""

URL_USERINFO = re.compile(
    r"(?P<scheme>(?<![a-z0-9+.-])[a-z][a-z0-9+.-]{0,30}://)"
    r"(?:(?P<user>[^\s:/?#@'\"<>\[\]]{0,256}):)?"
    r"(?P<password>[^\s/?#'\"<>\[\]]{0,1024})@",
    re.IGNORECASE,
)
"""The user-info of a URL of any scheme (``postgres://user:pass@host``,
``mysql+pymysql://…``, ``https://token@host``): the password, or a lone user name (an access
token in the user's place), is hidden. The password runs to the last ``@`` of the authority.
Lengths are bounded so that text full of ``://`` is still scanned in linear time."""

BEARER = re.compile(r"\b(?P<scheme>Bearer)[ \t]+(?P<token>[A-Za-z0-9._~+/=-]{8,})", re.IGNORECASE)
"""A bearer token written anywhere, even with no header name before it."""

_AUTH_SCHEMES = r"(?:bearer|basic|token|digest|negotiate|apikey|api-key)"


def _name_pattern(name: str) -> str:
    """``api_key`` -> ``api[\\s_-]?key``: the parts of a name, separated or not."""
    parts = [re.escape(part) for part in re.split(r"[\s_-]+", name.strip()) if part]
    return r"[\s_-]?".join(parts)


@functools.cache
def _compiled(names: tuple[str, ...]) -> tuple[re.Pattern[str], re.Pattern[str]]:
    """The key test for structured values and the ``key=value`` pattern for free text.

    The ``key=value`` family (the key is an atomic group: a key always runs to the end of
    its word, and trying shorter ones would make a long word cost quadratic time): the key
    is any word holding a secret name (``db_password``,
    ``X-Api-Key``, ``b'token'``); the separator is ``=`` or ``:``, or after a closing quote
    also ``,`` (a header tuple ``('Authorization', '…')``); the value is quoted (any quote,
    escaped or not: JSON inside a string, ``b'…'``; a quote left open runs to the end of its
    line), or one unquoted word after an optional auth scheme (``Bearer …``), or a tuple.
    """
    long_names = "|".join(_name_pattern(n) for n in names if len(n) > SHORT_NAME)
    short_names = "|".join(_name_pattern(n) for n in names if len(n) <= SHORT_NAME)
    alternatives = []
    if long_names:
        alternatives.append(rf"[\w.-]*(?:{long_names})[\w.-]*")
    if short_names:
        alternatives.append(rf"(?:[\w.-]*[_.-])?(?:{short_names})(?![a-z0-9])(?:[_.-][\w.-]*)?")
    key = "|".join(alternatives) or r"(?!)"
    is_secret_key = re.compile(
        rf"(?:{long_names or '(?!)'})|(?<![a-z0-9])(?:{short_names or '(?!)'})(?![a-z0-9])",
        re.IGNORECASE,
    )
    pair = re.compile(
        rf"""
        (?P<key>(?<![\w.-])(?>{key}))
        (?P<sep>\\*["'][ \t]*[:=,][ \t]*|[ \t]*[:=][ \t]*)
        (?:b?(?P<quote>\\*["'])
             (?:(?!(?P=quote))(?:\\[^\n]|[^\\\n]))*(?:(?P=quote)|\\?$)
          |(?P<scheme>{_AUTH_SCHEMES}[ \t]+)?[^\s,;&'"{{}}()\[\]\\][^\s,;&'"}})\]\\]*
          |\([^()\n]{{0,500}}\)(?![^\s,;&'"}})\]\\])
        )""",
        re.IGNORECASE | re.VERBOSE | re.MULTILINE,
    )
    return is_secret_key, pair


def _names() -> tuple[str, ...]:
    return cadence_settings.SECRET_KEYS


def is_secret_key(key: Any) -> bool:
    """True when ``key`` (a dict key, a header name) names a secret."""
    return bool(_compiled(_names())[0].search(str(key)))


def redact(value: Any) -> Any:
    """A copy of ``value`` with the values of secret-named keys replaced by ``********``.

    Dicts, lists and tuples are copied recursively, anything else is returned as is.
    """
    return _redact(value, _compiled(_names())[0], 0)


def _redact(value: Any, secret: re.Pattern[str], depth: int) -> Any:
    if depth > 2 * MAX_DEPTH:
        return "[nested too deeply]"
    if isinstance(value, dict):
        return {
            key: REDACTED if secret.search(str(key)) else _redact(item, secret, depth + 1)
            for key, item in value.items()
        }
    if isinstance(value, list | tuple):
        items = [_redact(item, secret, depth + 1) for item in value]
        return items if isinstance(value, list) else tuple(items)
    return value


def _hide_pair(match: re.Match[str]) -> str:
    quote = match["quote"] or ""
    return f"{match['key']}{match['sep']}{match['scheme'] or ''}{quote}{REDACTED}{quote}"


def _hide_userinfo(match: re.Match[str]) -> str:
    user = f"{match['user']}:" if match["user"] is not None else ""
    return f"{match['scheme']}{user}{REDACTED}@"


def redact_text(text: str) -> str:
    """``text`` with every secret the pattern families find replaced by ``********``.

    Never raises on any ``str`` (lone surrogates included) and is idempotent: redacting
    twice gives what redacting once gave.
    """
    text = str(text)
    text = PEM_PRIVATE_KEY.sub(lambda m: f"{m['begin']}{REDACTED}{m['end']}", text)
    text = URL_USERINFO.sub(_hide_userinfo, text)
    text = _compiled(_names())[1].sub(_hide_pair, text)
    return BEARER.sub(lambda m: f"{m['scheme']} {REDACTED}", text)


_UNENCODABLE = re.compile("[\ud800-\udfff]")
MAX_TEXT_CHARS = 10_000
_MARGIN = 1_000  # read past a cut, so a secret the cut falls in is still recognised


def storable_text(text: str) -> str:
    """``text`` as every database can store it: lone surrogates (an undecodable file name)
    become U+FFFD, NUL characters (PostgreSQL refuses them) the four characters ``\\x00``."""
    return _UNENCODABLE.sub("\ufffd", text).replace("\x00", "\\x00")


def clean_text(text: object, limit: int = MAX_TEXT_CHARS) -> str:
    """Job-provided text as it is stored and logged: redacted, storable, at most ``limit``
    characters (a longer one is cut and says so). Never raises, whatever ``text`` is."""
    try:
        raw = text if isinstance(text, str) else str(text)
    except Exception:  # noqa: BLE001 - a __str__ that raises still leaves a record
        raw = f"<{type(text).__name__} whose str() raised>"
    size = len(raw)
    cleaned = redact_text(storable_text(raw[: limit + _MARGIN]))
    if size <= limit and len(cleaned) <= limit:
        return cleaned
    note = f"\n[cut: {size} characters]"
    return cleaned[: max(0, limit - len(note))] + note
