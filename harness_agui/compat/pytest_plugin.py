"""A pytest plugin that runs a test suite against the compat package under the name
``a13n_stream_protocol``: ``pytest -p harness_agui.compat.pytest_plugin``.

Loaded with ``-p``, it installs before pytest imports any conftest or test module.
"""

from __future__ import annotations

from harness_agui.compat import install

install()
