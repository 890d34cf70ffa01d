# The server's plain settings as one frozen value, checked when made (and again by ``attrs.evolve``).

from __future__ import annotations

from collections.abc import Collection
from typing import Any

import attrs

from ..core.state import MAX_EVENT_BYTES
from ..host.batch import GroupCommit
from ..host.options import catch_up, count, seconds
from ..host.supervisor import SupervisorOptions
from ..wire.notices import CustomFilter

MAX_BODY_BYTES = 16 * 1024 * 1024
"""The default largest request body, in bytes (``max_body_bytes``; 413 beyond it)."""

def _paths(inst: Any, attribute: attrs.Attribute[Any], path: str) -> None:
    if "{thread_id}" not in path or "{run_id}" not in path:
        raise ValueError(f"{attribute.name} must hold {{thread_id}} and {{run_id}}: {path!r}")


def _cors_credentials(inst: ServerOptions, attribute: attrs.Attribute[Any], credentials: bool) -> None:
    if credentials and inst.cors_origins is not None and "*" in inst.cors_origins:
        raise ValueError('cors_credentials=True needs the origins listed: with cors_origins=["*"] any site '
                         "could make requests with the user's credentials (the CORS standard forbids it)")


def _notices(value: Collection[str] | None) -> tuple[str, ...] | None:
    if value is None:
        return None
    names = value if isinstance(value, (str, bytes)) else tuple(value)
    CustomFilter(names)  # its TypeError for one string, or a name that is not a str
    return tuple(names)


@attrs.frozen(kw_only=True)
class ServerOptions:
    """The plain settings of an ``AguiServer`` (see it for each one's meaning): every keyword it takes
    but the stores (``database``, ``journal``, ``deliveries``), ``processor``, ``reattach`` and
    ``authorize``. ValueError for a number out of range, a path without ``{thread_id}`` and
    ``{run_id}``, or credentials for any origin; ``attrs.evolve`` checks again."""

    synchronous: str = "FULL"
    runs_path: str = "/runs"
    events_path: str = attrs.field(default="/threads/{thread_id}/runs/{run_id}/events", validator=_paths)
    run_path: str = attrs.field(default="/threads/{thread_id}/runs/{run_id}", validator=_paths)
    health_path: str = "/health"
    keepalive: float = attrs.field(default=15.0, validator=seconds)
    retry: float = attrs.field(default=3.0, validator=seconds)
    poll_interval: float = attrs.field(default=0.05, validator=seconds)
    recover: bool = True
    catch_up_after: int | None = attrs.field(default=1000, validator=catch_up)
    lease_ttl: float = 10.0
    group_commit: GroupCommit | None = None
    max_followers: int = attrs.field(default=1000, validator=count)
    cors_origins: tuple[str, ...] | None = attrs.field(default=None, converter=attrs.converters.optional(tuple))
    cors_headers: tuple[str, ...] = attrs.field(default=(), converter=tuple)
    cors_credentials: bool = attrs.field(default=False, validator=_cors_credentials)
    cancel_on_disconnect: bool = attrs.field(default=False, converter=bool)
    max_body_bytes: int = attrs.field(default=MAX_BODY_BYTES, validator=count)
    show_hidden: bool = False
    max_event_bytes: int | None = MAX_EVENT_BYTES
    notices: tuple[str, ...] | None = attrs.field(default=None, converter=_notices)
    inspector: bool = False

    @property
    def supervisor(self) -> SupervisorOptions:
        """The options of the server's ``RunSupervisor``."""
        return SupervisorOptions(
            group_commit=self.group_commit, scan_interval=max(self.poll_interval, 0.2),
            poll_interval=self.poll_interval, catch_up_after=self.catch_up_after,
            max_followers=self.max_followers, keepalive=self.keepalive,
            observer_options={"show_hidden": self.show_hidden, "max_event_bytes": self.max_event_bytes})


