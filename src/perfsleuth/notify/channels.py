"""Deliver one outbox item: e-mail (SMTP), webhook (JSON POST), ticket file, node history.

Each deliverer raises :class:`DeliveryError` with a one-line reason when it fails; the caller
keeps the item in the outbox. Only the standard library (smtplib, urllib) is used.

The webhook's URL comes from the settings at delivery time, not from the outbox (which never
holds it): credentials in it (``https://user:password@host/…``) are sent as HTTP basic auth,
and every message shows the URL without them (:func:`perfsleuth.urls.redact`).
"""

from __future__ import annotations

import json
import os
import smtplib
import urllib.error
import urllib.parse
import urllib.request
from email.message import EmailMessage
from email.utils import formatdate, make_msgid
from pathlib import Path
from typing import TYPE_CHECKING, Any

from perfsleuth.errors import PerfsleuthError
from perfsleuth.notify.outbox import OutboxItem
from perfsleuth.urls import basic_auth, redact

if TYPE_CHECKING:
    from perfsleuth.store import Store

__all__ = ["DeliveryError", "build_email", "deliver"]


class DeliveryError(PerfsleuthError, OSError):
    """A notification could not be delivered now (it stays in the outbox)."""


def build_email(
    *, sender: str, to: list[str], subject: str, text: str, html: str
) -> dict[str, Any]:
    """An outbox payload for an e-mail: the whole RFC 5322 message and its envelope."""
    message = EmailMessage()
    message["From"] = sender
    message["To"] = ", ".join(to)
    message["Subject"] = subject
    message["Date"] = formatdate(localtime=False, usegmt=True)
    message["Message-ID"] = make_msgid(domain="perfsleuth.local")
    # quoted-printable keeps every line under SMTP's 998-character limit (inline SVG is long)
    message.set_content(text, cte="quoted-printable")
    message.add_alternative(html, subtype="html", cte="quoted-printable")
    return {"sender": sender, "to": to, "message": message.as_string()}


def _email(payload: dict[str, Any], *, host: str, port: int, timeout: float) -> None:
    if not host:
        raise DeliveryError("no smtp_host configured")
    try:
        with smtplib.SMTP(host, port, timeout=timeout) as smtp:
            # SMTP lines end in CRLF; smtplib sends bytes as they are
            text = str(payload["message"]).replace("\r\n", "\n").replace("\n", "\r\n")
            refused = smtp.sendmail(payload["sender"], list(payload["to"]), text.encode("utf-8"))
    except (TimeoutError, smtplib.SMTPException, OSError) as exc:
        raise DeliveryError(f"SMTP {host}:{port}: {type(exc).__name__}: {exc}") from exc
    if refused:
        raise DeliveryError(f"SMTP {host}:{port} refused {sorted(refused)}")


def _webhook(payload: dict[str, Any], *, url: str, timeout: float) -> None:
    url = url or str(payload.get("url", ""))  # items queued by older versions carry their URL
    shown = redact(url)
    if not url:
        raise DeliveryError("no webhook configured")
    if not url.startswith(("http://", "https://")):
        raise DeliveryError(f"webhook {shown!r}: only http(s) URLs are posted to")
    bare, auth = basic_auth(url)
    headers = {"Content-Type": "application/json", "User-Agent": "perfsleuth"}
    if auth is not None:
        headers["Authorization"] = auth
    request = urllib.request.Request(
        bare,
        data=json.dumps(payload["body"], ensure_ascii=False).encode("utf-8"),
        headers=headers,
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            status = response.status
    except urllib.error.HTTPError as exc:
        exc.close()
        raise DeliveryError(f"webhook {shown}: HTTP {exc.code}") from None
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        raise DeliveryError(f"webhook {shown}: {_redact_reason(reason, url)}") from None
    if not 200 <= status < 300:
        raise DeliveryError(f"webhook {shown}: HTTP {status}")


def _redact_reason(reason: object, url: str) -> str:
    """An error's text without the URL's secrets, should the error quote them."""
    text = str(reason)
    for secret in _secrets(url):
        text = text.replace(secret, "***")
    return text


def _secrets(url: str) -> list[str]:
    parts = urllib.parse.urlsplit(url)
    found = [parts.password or "", parts.username or "", parts.query, parts.fragment]
    return sorted({s for s in found if len(s) >= 3}, key=len, reverse=True)


def _ticket(payload: dict[str, Any]) -> None:
    folder = Path(payload["folder"])
    try:
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / str(payload["file"])
        tmp = path.with_name(f".{path.name}.tmp")
        tmp.write_text(json.dumps(payload["ticket"], indent=1, ensure_ascii=False), "utf-8")
        os.replace(tmp, path)
    except OSError as exc:
        raise DeliveryError(f"ticket folder {folder}: {exc.strerror or exc}") from exc


def _history(payload: dict[str, Any], store: Store | None) -> None:
    from datetime import datetime

    if store is None:
        raise DeliveryError("no store to append node history to")
    try:
        store.append_history(
            str(payload["node"]),
            str(payload["kind"]),
            str(payload["text"]),
            datetime.fromisoformat(str(payload["time"])),
        )
    except PerfsleuthError as exc:
        raise DeliveryError(f"node history: {exc}") from exc


def deliver(
    item: OutboxItem,
    *,
    smtp_host: str,
    smtp_port: int,
    timeout: float,
    store: Store | None,
    webhook: str = "",
) -> None:
    """Deliver ``item`` or raise :class:`DeliveryError` (``webhook``: the URL webhook items
    are posted to)."""
    if item.channel == "email":
        _email(item.payload, host=smtp_host, port=smtp_port, timeout=timeout)
    elif item.channel == "webhook":
        _webhook(item.payload, url=webhook, timeout=timeout)
    elif item.channel == "ticket":
        _ticket(item.payload)
    elif item.channel == "history":
        _history(item.payload, store)
    else:
        raise DeliveryError(f"unknown channel {item.channel!r}")
