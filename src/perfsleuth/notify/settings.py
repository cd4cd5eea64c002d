"""Notification settings: the ``[notify]`` table of the config (``perfsleuth.toml``)."""

from __future__ import annotations

from datetime import timedelta

from pydantic import BaseModel, ConfigDict, Field

from perfsleuth.durations import Duration

__all__ = ["NotifySettings"]


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
    smtp_timeout: Duration = Field(default=timedelta(seconds=10))
    webhook: str = ""
    tickets: str = Field(default="", description="folder for ticket files ('' = none)")
    repeat: Duration = Field(default=timedelta(days=1), description="re-notify while persisting")
