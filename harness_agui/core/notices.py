# What the Harness's own notices say: the few extension payloads whose
# meaning the projection (and a journal reader) depends on. Each reader
# returns a small value or None, and never raises: a payload that does not
# say what it would need to is simply not that notice, and stays an ordinary
# CUSTOM event.
#
#   - lifecycle ``{"type": "run_started"}``: a Run's first item (a child Run
#     of a delegating stream announces itself with one at sequence 0);
#   - lifecycle ``{"type": "model_request_started", "request_index": n}``:
#     model request n begins (generated part ids use n);
#   - lifecycle ``{"type": "model_request_completed"}`` /
#     ``{"type": "model_request_failed"}``: the request's response is over
#     (nothing more streams into its parts);
#   - delegation ``{"type": "inline_delegation", "action": ...}``: a child Run
#     is linked to its parent ("started", under the child's own run id) or its
#     delegation ended ("completed" / "failed", under the delegating Run);
#   - a suspended Run's deferred metadata ``{call id: {"a13n.harness.client-tool":
#     {...}}}``: the call is one of the client's own tools (a frontend tool), which
#     the client runs and answers with a tool message, not an interrupt.

from __future__ import annotations

from typing import Any

import attrs

from .source import ExtensionEvent, HarnessEvent, HarnessStreamEvent

__all__ = ["DelegationNotice", "delegation_notice", "is_run_started", "model_request_ended", "model_request_started",
           "is_client_tool_call", "CLIENT_TOOL_KEY"]

CLIENT_TOOL_KEY = "a13n.harness.client-tool"
"""The key of a deferred call's metadata that marks it as a call of one of the client's own tools."""


@attrs.frozen
class DelegationNotice:
    """The fields of an ``inline_delegation`` extension payload the
    projection reads (each None when absent or not a string)."""

    action: str
    child_run_id: str | None
    parent_run_id: str | None
    parent_tool_call_id: str | None
    subagent: str | None
    status: str | None


def delegation_notice(payload: Any) -> DelegationNotice | None:
    """The delegation notice a payload carries, or None for any other payload."""
    if type(payload) is not ExtensionEvent or payload.kind != "delegation":
        return None
    body = payload.payload
    if not isinstance(body, dict) or body.get("type") != "inline_delegation":
        return None
    action = body.get("action")
    if not isinstance(action, str):
        return None

    def text(name: str) -> str | None:
        value = body.get(name)
        return value if isinstance(value, str) else None

    return DelegationNotice(action, text("child_run_id"), text("parent_run_id"), text("parent_tool_call_id"),
                            text("subagent") or text("child_instance_id"), text("status"))


def is_run_started(item: HarnessStreamEvent) -> bool:
    """Whether ``item`` is a lifecycle ``run_started`` notice."""
    if type(item) is not HarnessEvent or type(item.event) is not ExtensionEvent:
        return False
    body = item.event.payload
    return item.event.kind == "lifecycle" and isinstance(body, dict) and body.get("type") == "run_started"


def model_request_started(payload: ExtensionEvent) -> int | None:
    """The request index of a lifecycle ``model_request_started`` notice, else None."""
    body = payload.payload
    if payload.kind != "lifecycle" or not isinstance(body, dict) or body.get("type") != "model_request_started":
        return None
    n = body.get("request_index")
    return n if isinstance(n, int) and not isinstance(n, bool) and n >= 0 else None


def is_client_tool_call(tool_call_id: str, metadata: Any) -> bool:
    """Whether a suspended Run's deferred ``metadata`` marks call ``tool_call_id`` as a call of one of the
    client's own tools (``CLIENT_TOOL_KEY``)."""
    entry = metadata.get(tool_call_id) if isinstance(metadata, dict) else None
    return isinstance(entry, dict) and isinstance(entry.get(CLIENT_TOOL_KEY), dict)


def model_request_ended(payload: ExtensionEvent) -> bool:
    """Whether ``payload`` is a lifecycle ``model_request_completed`` or ``model_request_failed`` notice."""
    body = payload.payload
    return payload.kind == "lifecycle" and isinstance(body, dict) and body.get("type") in (
        "model_request_completed", "model_request_failed")
