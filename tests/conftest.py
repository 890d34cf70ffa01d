import os

from hypothesis import HealthCheck, settings

# CI runs on shared, noisy machines: no deadlines, a fixed seed so a landing
# is reproducible, and enough examples to matter within the time budget.
settings.register_profile(
    "ci",
    deadline=None,
    derandomize=True,
    max_examples=150,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile(
    "dev",
    deadline=None,
    max_examples=100,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev"))


# -- the official AG-UI client ------------------------------------------------------------------
# tests/node holds @ag-ui/client (pinned by its package-lock.json), installed on first use. Nothing that needs it
# is skipped: without node or npm, or when the install fails, those tests fail. A file lock keeps two pytest
# processes (pytest-xdist's workers) from installing at once.

import fcntl  # noqa: E402
import shutil  # noqa: E402
import subprocess  # noqa: E402
from pathlib import Path  # noqa: E402

import pytest  # noqa: E402

NODE_DIR = Path(__file__).parent / "node"


@pytest.fixture(scope="session")
def node() -> str:
    """The node executable, with tests/node's packages installed."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        pytest.fail("node and npm are needed to talk to @ag-ui/client; neither may be missing")
    installed = NODE_DIR / "node_modules" / "@ag-ui" / "client" / "package.json"
    with open(NODE_DIR / ".install.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not installed.exists():
            done = subprocess.run([npm, "ci", "--prefix", str(NODE_DIR), "--no-audit", "--no-fund"],
                                  capture_output=True, text=True, timeout=600)
            if done.returncode != 0:
                pytest.fail(f"npm ci in {NODE_DIR} failed:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    return node
