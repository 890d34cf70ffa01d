# Serving AG-UI over HTTP (the ``serve`` extra): the HTTP layer over the run supervisor (``host.supervisor``).
# Its public names are these, from its modules:
#
#   _app       ``AguiServer`` and ``create_app``: the routes and the requests (its opening comment says what
#              each route answers, and with which status)
#   _options   ``ServerOptions``: the server's plain settings, checked when made
#   _http      the small HTTP pieces: JSON error answers, the ids a client may name, the raw-path route, CORS
#   _process   for the process that serves: ``tune_collector`` and the simulated ``demo_harness``
#   _launch    what ``harness-agui serve`` and ``harness-agui inspect`` run under uvicorn (imported by the
#              command line only: it needs uvicorn, which an app embedded in a Host does not)

try:
    import starlette  # noqa: F401
except ImportError as e:  # pragma: no cover - depends on the installation
    raise ImportError("harness_agui.serve needs Starlette: pip install 'harness-agui[serve]'") from e

from ..host.batch import GroupCommit
from ..host.runner import CallableRunner, RequestContext, Runner, RunnerCallable, RunRefused, StartedRun
from ..host.supervisor import FAILURE_CODES, Reattach
from ._app import AguiServer, Authorize, create_app
from ._http import MAX_ID_LENGTH
from ._options import MAX_BODY_BYTES, ServerOptions
from ._process import demo_harness, tune_collector

__all__ = [
    "AguiServer",
    "ServerOptions",
    "create_app",
    "Runner",
    "RunnerCallable",
    "StartedRun",
    "CallableRunner",
    "RequestContext",
    "RunRefused",
    "Authorize",
    "Reattach",
    "FAILURE_CODES",
    "GroupCommit",
    "MAX_ID_LENGTH",
    "MAX_BODY_BYTES",
    "demo_harness",
    "tune_collector",
]
