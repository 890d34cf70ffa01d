"""Serve AG-UI for a Harness: `python examples/serve_app.py`, then POST a RunAgentInput to /agui/runs."""

import asyncio
import os

import uvicorn
from starlette.applications import Starlette
from starlette.routing import Mount

from harness_agui.serve import AguiServer
from harness_agui.testing import SourceBuilder


async def harness(run_input):  # your Harness: the source items of the Run the request names
    said = next((m.content for m in reversed(run_input.messages) if m.role == "user"), "")
    said = said if isinstance(said, str) else "(media)"
    b = SourceBuilder(run_input.thread_id, run_input.run_id)
    b.user(said).request().text(0, ["You ", "said: ", said]).completed(f"You said: {said}")
    for item in b.items:
        await asyncio.sleep(0.03)  # a model's token pace
        yield item


server = AguiServer(harness, database=os.environ.get("HARNESS_DB", "host.db"), synchronous="NORMAL")
app = Starlette(routes=[Mount("/agui", app=server.app)],
                lifespan=lambda app: server.lifespan())  # mounted apps get no lifespan of their own

if __name__ == "__main__":
    uvicorn.run(app, host="127.0.0.1", port=int(os.environ.get("PORT", "8000")), timeout_graceful_shutdown=1)
