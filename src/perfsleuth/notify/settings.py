"""Notification settings: the ``[notify]`` table of the config (``perfsleuth.toml``)."""

from __future__ import annotations

from datetime import timedelta
from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from perfsleuth.durations import Duration, format_duration

__all__ = ["NotifySettings", "within"]


def within(low: timedelta, high: timedelta) -> AfterValidator:
    """A validator of a duration between ``low`` and ``high`` (a mistyped unit must not
    mean a year), for the config's duration fields."""

    def check(value: timedelta) -> timedelta:
        if not low <= value <= high:
            raise ValueError(
                f"{format_duration(value)} is out of range: give {format_duration(low)} "
                f"to {format_duration(high)}"
            )
        return value

    return AfterValidator(check)


def _webhook(url: str) -> str:
    if url and not url.startswith(("http://", "https://")):
        raise ValueError("the webhook must be an http:// or https:// URL")
    return url


class NotifySettings(BaseModel):
    """Who hears about what, and how (see :mod:`perfsleuth.notify`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    recipients: tuple[str, ...] = Field(default=(), description="support staff")
    analysts: tuple[str, ...] = Field(default=(), description="the capacity planners (FYEO)")
    stealth: bool = Field(default=False, description="send everything only to the analysts")
    stealth_kinds: tuple[str, ...] = Field(default=("capture_ratio",))
    sender: str = "perfsleuth@localhost"
    smtp_host: str = ""
    smtp_port: int = Field(default=25, ge=1, le=65535)
    smtp_timeout: Annotated[Duration, within(timedelta(seconds=1), timedelta(minutes=5))] = Field(
        default=timedelta(seconds=10), description="per SMTP or webhook delivery"
    )
    webhook: Annotated[str, AfterValidator(_webhook)] = Field(
        default="",
        description="URL findings are POSTed to as JSON; user:password@ in it is sent as HTTP "
        "basic auth (never printed or stored)",
    )
    tickets: str = Field(default="", description="folder for ticket files ('' = none)")
    repeat: Annotated[Duration, within(timedelta(minutes=1), timedelta(days=366))] = Field(
        default=timedelta(days=1), description="re-notify while persisting"
    )
