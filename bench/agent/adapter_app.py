"""pydantic-ai's own AG-UI server, for ``python -m bench.serve_load``'s ``pydantic-agui`` configuration: a
plain pydantic-ai ``Agent`` on the bench's model (``stamps.py``, the same stamped deltas at the same pace as
the a13n agent's) behind ``AGUIAdapter.dispatch_request``, on the routes the bench's client uses (POST /runs,
GET /health). It keeps nothing: no journal, no delivery log, no recovery. Served with
``uvicorn adapter_app:app`` from this folder.
"""

from __future__ import annotations

from pydantic_ai import Agent
from pydantic_ai.ui.ag_ui import AGUIAdapter
from stamps import stamping_model
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route

agent = Agent(stamping_model(), output_type=str)


async def runs(request: Request) -> Response:
    return await AGUIAdapter.dispatch_request(request, agent=agent)


async def health(request: Request) -> Response:
    return PlainTextResponse("ok")


app = Starlette(routes=[Route("/runs", runs, methods=["POST"]), Route("/health", health, methods=["GET"])])
