"""The run inspector without a browser: its command line, its answers to bad requests, and how a Run's
last event names its status (tests/test_inspect_browser.py drives the pages in chromium)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from harness_agui.cli import main
from harness_agui.host.delivery import Delivery
from harness_agui.inspect import open_inspector
from harness_agui.inspect._read import status_of

sys.path.insert(0, str(Path(__file__).parent))
from inspect_fill import big_payload_run, fill, hostile_run  # noqa: E402


@pytest.fixture
def client(tmp_path: Path):  # type: ignore[no-untyped-def]
    database = tmp_path / "host.db"
    fill(database, [hostile_run(), big_payload_run()])
    inspector, close = open_inspector(database)
    with TestClient(inspector.app) as c:
        yield c
    close()


def test_inspect_of_a_missing_database_is_one_line_and_status_2(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["inspect", str(tmp_path / "nothing.db"), "--port", "0"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no such file" in err


def test_inspect_opens_the_database_read_only_and_writes_nothing(tmp_path: Path) -> None:
    database = tmp_path / "host.db"
    fill(database, [hostile_run()])
    before = database.read_bytes()
    inspector, close = open_inspector(database)
    try:
        assert inspector.db.journal.read_only and inspector.db.deliveries.read_only
        with TestClient(inspector.app) as c:
            assert c.get("/").status_code == 200
            assert c.get("/run", params={"id": "run-hostile"}).status_code == 200
    finally:
        close()
    assert database.read_bytes() == before


def test_an_unknown_run_is_404_and_a_bad_step_is_400(client: TestClient) -> None:
    assert client.get("/run", params={"id": "no-such-run"}).status_code == 404
    assert client.get("/run").status_code == 400
    assert client.get("/run/step", params={"id": "run-hostile", "k": "-1"}).status_code == 400
    assert client.get("/run/step", params={"id": "run-hostile", "k": "999"}).status_code == 404


def test_pages_forbid_inline_script_and_escape_run_text(client: TestClient) -> None:
    page = client.get("/run/conversation", params={"id": "run-hostile"})
    assert "<script>" not in page.text and "&lt;script&gt;" in page.text and "\x1b" not in page.text
    run = client.get("/run", params={"id": "run-hostile"})
    assert "script-src" not in run.headers["content-security-policy"]  # default-src 'self': no inline script
    assert "default-src 'self'" in run.headers["content-security-policy"]


def test_a_whole_payload_is_plain_text_and_the_step_shows_it_cut(client: TestClient) -> None:
    step = client.get("/run/step", params={"id": "run-big-payload", "k": 5})
    assert "cut at 4000 of" in step.text
    whole = client.get("/run/item", params={"id": "run-big-payload", "k": 5})
    assert whole.headers["content-type"].startswith("text/plain")
    assert whole.headers["x-content-type-options"] == "nosniff"
    assert json.loads(whole.text)["event"]["content"]["text"].count("line of the log") == 2000


def _last(event_type: str, data: dict[str, object]) -> Delivery:
    return Delivery("run-1", 9, 8, event_type, json.dumps({"type": event_type, **data}))


@pytest.mark.parametrize(("event_type", "data", "kind", "detail"), [
    ("RUN_FINISHED", {"outcome": {"type": "success"}}, "finished", ""),
    ("RUN_FINISHED", {"outcome": {"type": "cancelled"}}, "cancelled", ""),
    ("RUN_FINISHED", {"outcome": {"type": "interrupt", "interrupts": [
        {"reason": "tool_approval", "message": "Waiting for approval of rm"}]}},
     "suspended", "on an approval (Waiting for approval of rm)"),
    ("RUN_FINISHED", {"outcome": {"type": "interrupt", "interrupts": [{"reason": "client_tool"}]}},
     "suspended", "on a client tool"),
    ("RUN_ERROR", {"message": "boom", "code": "provider_error"}, "failed", "boom [provider_error]"),
    ("RUN_ERROR", {"message": "cancelled", "code": "harness_agui.cancelled"}, "cancelled", "cancelled"),
    ("RUN_ERROR", {"message": "nothing more", "code": "harness_agui.harness_lost"}, "lost", "nothing more"),
])
def test_a_runs_last_event_names_its_status(event_type: str, data: dict[str, object], kind: str,
                                            detail: str) -> None:
    status = status_of(_last(event_type, data), journal_finished=True, delivered=True)
    assert (status.kind, status.detail) == (kind, detail)


def test_a_run_without_its_last_event_is_running_or_unrecorded() -> None:
    assert status_of(None, journal_finished=False, delivered=False).kind == "running"
    assert status_of(None, journal_finished=True, delivered=False).kind == "unrecorded"
