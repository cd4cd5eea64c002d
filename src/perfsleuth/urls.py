"""URLs that carry secrets: shown without them, sent with them as HTTP basic auth.

A webhook or Prometheus URL may hold credentials (``https://user:password@host/…``) or a token
in its query (``…?token=…``). Everything perfsleuth prints, logs, stores or renders shows
:func:`redact`'s form instead; :func:`basic_auth` takes the credentials out of a URL for the
``Authorization`` header (urllib would otherwise take ``user:password@host`` for a host name).
"""

from __future__ import annotations

import base64
import re
import urllib.parse

__all__ = ["basic_auth", "redact", "redact_text"]

_HIDDEN = "***"
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s'\"<>`]+")


def redact(url: str) -> str:
    """``url`` with its credentials, query values and fragment replaced by ``***``.

    Scheme, host, port and path stay, so the message still says where it went:
    ``https://alice:pw@hooks.example/x?token=t`` → ``https://***@hooks.example/x?token=***``.
    """
    try:
        parts = urllib.parse.urlsplit(url)
        parts.port  # noqa: B018 -- raises ValueError on a malformed port
    except ValueError:
        scheme = url.split("://", 1)[0] if "://" in url else ""
        return f"{scheme}://{_HIDDEN}" if scheme else _HIDDEN
    netloc = parts.netloc
    if "@" in netloc:
        netloc = f"{_HIDDEN}@{netloc.rsplit('@', 1)[1]}"
    query = "&".join(
        f"{name}={_HIDDEN}" if value else name
        for name, value in (
            pair.split("=", 1) if "=" in pair else (pair, "")
            for pair in parts.query.split("&")
            if pair
        )
    )
    fragment = _HIDDEN if parts.fragment else ""
    return urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, query, fragment))


def redact_text(text: str) -> str:
    """``text`` with every URL in it redacted (:func:`redact`)."""
    return _URL.sub(lambda match: redact(match.group(0)), text)


def basic_auth(url: str) -> tuple[str, str | None]:
    """``url`` without its ``user:password@`` part, and the ``Authorization`` header value
    those credentials make (None without credentials). Both are percent-decoded first."""
    parts = urllib.parse.urlsplit(url)
    if "@" not in parts.netloc:
        return url, None
    userinfo, host = parts.netloc.rsplit("@", 1)
    user, _, password = userinfo.partition(":")
    pair = f"{urllib.parse.unquote(user)}:{urllib.parse.unquote(password)}"
    token = base64.b64encode(pair.encode("utf-8")).decode("ascii")
    bare = urllib.parse.urlunsplit((parts.scheme, host, parts.path, parts.query, parts.fragment))
    return bare, f"Basic {token}"
