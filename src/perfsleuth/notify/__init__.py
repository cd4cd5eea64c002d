"""Notifications: one combined summary per run by e-mail, webhook, ticket files and node history.

See :mod:`perfsleuth.notify.run` for the policy (duplicates, daily repeats, stealth) and
:mod:`perfsleuth.notify.outbox` for how undeliverable notifications are kept and retried.
"""

from perfsleuth.notify.outbox import Outbox, OutboxItem
from perfsleuth.notify.run import NotifyReport, flush, notify, pathology_key
from perfsleuth.notify.settings import NotifySettings
from perfsleuth.notify.summary import Graph, Summary, render_summary
from perfsleuth.notify.svg import sparkline

__all__ = [
    "Graph",
    "NotifyReport",
    "NotifySettings",
    "Outbox",
    "OutboxItem",
    "Summary",
    "flush",
    "notify",
    "pathology_key",
    "render_summary",
    "sparkline",
]
