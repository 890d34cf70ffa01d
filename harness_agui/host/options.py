# The run supervisor's settings as one frozen value: the supervisor, its
# driver and its followers read them from here instead of each taking (and
# re-listing) its own keywords. The validators are the settings' only checks;
# ``serve.ServerOptions`` reuses them for the settings it passes on.

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs
from pyrsistent import PMap, pmap

from .batch import GroupCommit

__all__ = ["SupervisorOptions"]


def seconds(inst: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    """A number of seconds > 0 (not a bool)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise ValueError(f"{attribute.name} must be a number of seconds > 0, not {value!r}")


def count(inst: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    """An int >= 1 (not a bool)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{attribute.name} must be an int >= 1, not {value!r}")


def catch_up(inst: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    """None, or an int >= 0 (not a bool)."""
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
        raise ValueError(f"{attribute.name} must be an int >= 0 or None, not {value!r}")


def _observer_options(inst: Any, attribute: attrs.Attribute[Any], value: PMap[str, Any]) -> None:
    reserved = sorted({"client_thread_id", "client_run_id", "retain_events"} & set(value))
    if reserved:
        raise ValueError(f"observer_options may not set {', '.join(reserved)}: the supervisor sets them per Run")


def _frozen_mapping(value: Mapping[str, Any] | None) -> PMap[str, Any]:
    return pmap(value or {})


@attrs.frozen(kw_only=True)
class SupervisorOptions:
    """The plain settings of a ``RunSupervisor`` (see it for each one's meaning). ValueError for a
    number out of range or a reserved observer option; ``attrs.evolve`` checks again."""

    group_commit: GroupCommit | None = None
    scan_interval: float = attrs.field(default=0.5, validator=seconds)
    poll_interval: float = attrs.field(default=0.05, validator=seconds)
    recheck: float = attrs.field(default=30.0, validator=seconds)
    catch_up_after: int | None = attrs.field(default=1000, validator=catch_up)
    max_followers: int = attrs.field(default=1000, validator=count)
    window: int = attrs.field(default=1024, validator=count)
    page: int = attrs.field(default=512, validator=count)
    keepalive: float = attrs.field(default=15.0, validator=seconds)
    batch_items: int = attrs.field(default=256, validator=count)
    queue_items: int = attrs.field(default=1024, validator=count)
    observer_options: PMap[str, Any] = attrs.field(factory=pmap, converter=_frozen_mapping,
                                                   validator=_observer_options)
