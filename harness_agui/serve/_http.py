# The small HTTP pieces of the server: the JSON error answers (raised as ``_Refused`` from deep in a
# request's handling and answered by ``AguiServer._answer``), the checks of a client's ids, the route that
# reads its parameters from the raw path (so an id holding ``/`` is reached as ``%2F``), and Starlette's CORS
# middleware with a 204 preflight.

from __future__ import annotations

import urllib.parse
from typing import Any

from starlette.datastructures import Headers
from starlette.middleware.cors import CORSMiddleware
from starlette.responses import JSONResponse, Response
from starlette.routing import Match, Route
from starlette.types import Scope

MAX_ID_LENGTH = 512
"""The longest ``threadId`` or ``runId`` the server takes, in characters (422 beyond it). 512
characters of UTF-8 fit every index of both backends."""

SSE_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
CORS_HEADERS = ("content-type", "accept", "authorization", "last-event-id")


def _error(status: int, error: str, message: str, **extra: Any) -> JSONResponse:
    return JSONResponse({"error": error, "message": message, **extra}, status_code=status)


class _Refused(Exception):
    def __init__(self, response: JSONResponse) -> None:
        self.response = response


def _refuse(status: int, error: str, message: str, **extra: Any) -> _Refused:
    return _Refused(_error(status, error, message, **extra))


def check_id(name: str, value: str) -> None:
    """Raise the 422 answer for an id the server does not take: blank, longer than ``MAX_ID_LENGTH``,
    or not storable on every backend (NUL, a lone surrogate)."""
    if not value.strip():
        raise _refuse(422, "invalid_request", f"{name} must not be blank")
    if len(value) > MAX_ID_LENGTH:
        raise _refuse(422, "id_too_long", f"{name} is {len(value)} characters long; at most {MAX_ID_LENGTH} are taken")
    if "\x00" in value:
        raise _refuse(422, "bad_id", f"{name} holds a NUL character, which a database cannot store")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise _refuse(422, "bad_id", f"{name} holds a lone surrogate: it is not Unicode text") from None


class _EncodedRoute(Route):
    """A route whose path parameters are read from the raw (still percent-encoded) path, each decoded
    on its own, so that an id holding ``/`` can be named as ``%2F``."""

    def matches(self, scope: Scope) -> tuple[Match, Scope]:
        raw = scope.get("raw_path") if scope["type"] == "http" else None
        if not raw:
            return super().matches(scope)
        path = raw.split(b"?", 1)[0].decode("latin-1")
        root = scope.get("root_path", "").rstrip("/")
        if root:  # a mounted app: drop as many segments as the mount's prefix has
            segments = path.split("/")
            path = "/" + "/".join(segments[root.count("/") + 1:])
        found = self.path_regex.match(path)
        if found is None:
            return super().matches(scope)
        params = dict(scope.get("path_params", {}))
        params.update({name: urllib.parse.unquote(value) for name, value in found.groupdict().items()})
        child = {"endpoint": self.endpoint, "path_params": params}
        if self.methods and scope["method"] not in self.methods:
            return Match.PARTIAL, child
        return Match.FULL, child


class _Cors(CORSMiddleware):
    """Starlette's CORS middleware, answering an accepted preflight with 204 and no body."""

    def preflight_response(self, request_headers: Headers) -> Response:
        response = super().preflight_response(request_headers)
        if response.status_code != 200:
            return response
        headers = {k: v for k, v in response.headers.items() if k not in ("content-length", "content-type")}
        return Response(status_code=204, headers=headers)
