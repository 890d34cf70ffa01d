"""The run inspector in a real browser: `harness-agui inspect DB` in a child process, Debian's chromium
driven by Playwright for Python, on a database filled through the Host kit (tests/inspect_fill.py).

Nothing here is skipped: without Playwright or chromium (``make test`` installs both: the dev extra and
tools/ensure_chromium) these tests fail saying what is missing. Each page is shot at the end of the test that
shows it; ``make screenshots`` writes the shots and the long Run's figures to docs/inspector/ (docs/inspector.md
links them), a plain test run to a temporary folder it removes.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness_agui.core.conversation import EMPTY_CONVERSATION, Message, fold_events
from harness_agui.debug.text import escape_terminal
from harness_agui.host import SqliteDeliveryLog, SqliteSourceJournal, project_run
from harness_agui.testing import SourceBuilder
from harness_agui.wire.codec import encode

sys.path.insert(0, str(Path(__file__).parent))
from inspect_fill import HOSTILE, fill, in_thread, long_run, sample_runs  # noqa: E402

# The screenshots and the first-paint figures of the docs (docs/inspector/) are written there only when asked
# (``make screenshots``), so that a test run leaves the work tree as it found it; otherwise they go to a
# temporary folder, and every page is shot all the same (a page that cannot be shot fails the test).
DOCS_SHOTS = Path(__file__).resolve().parent.parent / "docs" / "inspector"
SHOTS = DOCS_SHOTS if os.environ.get("HARNESS_AGUI_WRITE_SCREENSHOTS") == "1" else \
    Path(tempfile.gettempdir()) / f"harness-agui-inspector-{os.getpid()}"


@pytest.fixture(scope="module", autouse=True)
def _shots_folder() -> Iterator[None]:
    yield
    if SHOTS != DOCS_SHOTS:
        shutil.rmtree(SHOTS, ignore_errors=True)


CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]


# -- fixtures ---------------------------------------------------------------------------------------

def start_inspector(database: Path, port: int = 0) -> tuple[subprocess.Popen[str], str]:
    """`harness-agui inspect DB --port 0` (or another port) and the address it prints."""
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    proc = subprocess.Popen([sys.executable, "-m", "harness_agui", "inspect", str(database), "--port", str(port)],
                            stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True, env=env)
    assert proc.stderr is not None
    line = proc.stderr.readline()
    found = re.search(r"on (http://[\d.]+:\d+)/", line)
    if found is None:
        proc.kill()
        pytest.fail(f"harness-agui inspect did not say where it listens: {line!r}")
    return proc, found.group(1)


def stop(proc: subprocess.Popen[str]) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.fail("the inspector's browser tests need Playwright for Python (the dev extra: pip install -e '.[dev]')")
    executable = shutil.which("chromium") or "/usr/bin/chromium"
    if not os.path.exists(executable):
        pytest.fail("the inspector's browser tests need Debian's chromium (tools/ensure_chromium installs it)")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    yield page
    context.close()
    assert not errors, f"the page raised: {errors}"


@pytest.fixture(scope="module")
def filled(tmp_path_factory: pytest.TempPathFactory) -> Path:
    database = tmp_path_factory.mktemp("inspect") / "host.db"
    fill(database, sample_runs())
    fill(database, [refused_run()])
    return database


@pytest.fixture(scope="module")
def inspector(filled: Path) -> Iterator[str]:
    proc, url = start_inspector(filled)
    yield url
    stop(proc)


def refused_run() -> list[Any]:
    # Its item 4 is a delta of a part that never started: the journal takes it, the projection refuses it.
    from harness_agui.core.source import PartDeltaEvent, TextPartDelta

    b = SourceBuilder("thread-refused", "run-refused")
    b.user("Say something.").request().text(0, ["Some", "thing."])
    items = b.items[:4] + [b.items[4].__class__(
        thread_id="thread-refused", run_id="run-refused", sequence=4, occurred_at=b.items[4].occurred_at,
        event=PartDeltaEvent(index=7, delta=TextPartDelta(content_delta="stray")))] + b.items[5:]
    return items


def conversation_of(database: Path, run_id: str) -> Any:
    with SqliteDeliveryLog(database, read_only=True) as log:
        return fold_events(EMPTY_CONVERSATION, [d.event for d in log.replay(run_id)])


def shown(text: str) -> str:
    """Run text as a page shows it (escape_terminal), with white space made comparable."""
    return " ".join(escape_terminal(text, multiline=True).split())


def visible(page: Any, selector: str) -> str:
    return " ".join(page.locator(selector).inner_text().split())


def shot(page: Any, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=False)


def open_run(page: Any, url: str, run_id: str) -> None:
    page.goto(f"{url}/run?id={run_id}")
    page.wait_for_selector("#conversation .conversation-body")


# -- the Thread list ----------------------------------------------------------------------------------

def test_the_thread_list_shows_every_thread_newest_first_and_searches(page: Any, inspector: str,
                                                                      filled: Path) -> None:
    with SqliteSourceJournal(filled, read_only=True) as journal:
        threads = {journal.thread_of(r) for r in journal.runs()}
        runs = set(journal.runs())
    page.goto(inspector + "/")
    listed = page.eval_on_selector_all("section.thread", "els => els.map(e => e.dataset.thread)")
    assert set(listed) == threads and len(listed) == len(threads)
    assert set(page.eval_on_selector_all("tr[data-run]", "els => els.map(e => e.dataset.run)")) == runs
    statuses = dict(page.eval_on_selector_all(
        "tr[data-run]", "els => els.map(e => [e.dataset.run, e.querySelector('[data-status]').dataset.status])"))
    assert statuses["run-weather"] == "finished"
    assert statuses["run-ops-2a"] == "suspended" and statuses["run-ops-2b"] == "finished"
    assert statuses["run-0dfc24a53b8b4dbc96b4520ad470e2ad"] == "cancelled"
    assert statuses["run-01dcf183301c4c91ac0a8294967cc080"] == "failed"
    assert statuses["run-refused"] == "failed"
    latest = page.eval_on_selector_all("section.thread", "els => els.map(e => [...e.querySelectorAll("
                                       "'tbody td:nth-child(3)')].map(t => t.textContent).sort().pop())")
    assert latest[0] and latest == sorted(latest, reverse=True)  # by each Thread's latest Run, newest first
    shot(page, "threads")

    page.fill("input[name=q]", "umbrella")  # the text of a user message
    page.press("input[name=q]", "Enter")
    page.wait_for_url(re.compile(r"q=umbrella"))
    assert page.eval_on_selector_all("section.thread", "els => els.map(e => e.dataset.thread)") == ["thread-weather"]
    page.goto(inspector + "/?q=run-ops-2b")  # a run id
    assert page.eval_on_selector_all("section.thread", "els => els.map(e => e.dataset.thread)") == ["thread-ops-2"]


# -- one Run as the client saw it -------------------------------------------------------------------

def test_every_run_page_shows_each_user_message_and_the_final_answer(page: Any, inspector: str,
                                                                     filled: Path) -> None:
    with SqliteSourceJournal(filled, read_only=True) as journal:
        runs = journal.runs()
    answers = 0
    for run_id in runs:
        conv = conversation_of(filled, run_id)
        user = [e.text for e in conv.entries if isinstance(e, Message) and e.role == "user" and e.text]
        said = [e.text for e in conv.entries if isinstance(e, Message) and e.kind == "text"
                and e.role == "assistant" and e.subagent_run_id is None and e.text]
        open_run(page, inspector, run_id)
        text = visible(page, "#conversation")
        for message in user:
            assert shown(message) in text, (run_id, message)
        if said:
            assert shown(said[-1]) in text, (run_id, said[-1])
            answers += 1
    assert answers >= 5

    open_run(page, inspector, "run-b432af581d754332bc945baabbb683ae")  # the subagent under its delegation
    assert page.locator("#conversation .row.tool details.subagent").count() >= 1
    assert "run-8aa2789c382a4e24b400309b39a836c4" in visible(page, "#conversation .children")
    shot(page, "run-subagent")
    open_run(page, inspector, "run-ops-2a")  # suspended on an approval; the next Run of its Thread answers it
    assert "on an approval" in visible(page, "#run-status")
    page.click("#next-run")
    page.wait_for_selector("#conversation .conversation-body")
    assert "run-ops-2b" in page.url and page.locator("#previous-run").count() == 1
    shot(page, "run-approval-answered")


# -- stepping through -------------------------------------------------------------------------------

@pytest.mark.parametrize("run_id", ["run-weather", "run-b432af581d754332bc945baabbb683ae"])
def test_stepping_to_item_k_shows_exactly_the_events_the_delivery_log_holds_for_it(
        page: Any, inspector: str, filled: Path, run_id: str) -> None:
    with SqliteDeliveryLog(filled, read_only=True) as log:
        recorded = log.replay(run_id)
    with SqliteSourceJournal(filled, read_only=True) as journal:
        items = journal.cursor(run_id) + 1
    open_run(page, inspector, run_id)
    page.click("#step-next")  # to item 1, then back with the keyboard
    page.wait_for_selector('.step[data-k="1"]')
    page.keyboard.press("ArrowLeft")
    for k in range(items):
        if k:
            page.keyboard.press("ArrowRight")
        page.wait_for_selector(f'.step[data-k="{k}"]')
        expected = [d for d in recorded if d.source_position == k]
        rows = page.eval_on_selector_all(
            ".step tr.event", "els => els.map(e => [e.dataset.sseId, e.querySelector('pre').textContent])")
        assert [r[0] for r in rows] == [d.sse_id for d in expected], k
        assert [json.loads(r[1]) for r in rows] == [json.loads(d.data) for d in expected], k
    page.wait_for_selector('#step-conversation[aria-busy="false"]')  # the conversation as it stood after it
    conv = conversation_of(filled, run_id)
    said = [e.text for e in conv.entries if isinstance(e, Message) and e.kind == "text" and e.role == "assistant"
            and e.subagent_run_id is None and e.text]
    assert shown(said[-1]) in visible(page, "#step-conversation")
    shot(page, f"step-{'weather' if run_id == 'run-weather' else 'subagent'}")


def test_first_problem_jumps_to_the_item_the_projection_refused(page: Any, inspector: str) -> None:
    open_run(page, inspector, "run-refused")
    page.click("#step-problem")
    page.wait_for_selector('.step[data-k="4"]')
    assert "stray" in visible(page, ".step-item")
    assert "not recorded" in visible(page, ".step-item")
    assert "ProjectionError" in visible(page, "#problem-note") or "Error" in visible(page, "#problem-note")
    shot(page, "step-refused")


# -- text is text -----------------------------------------------------------------------------------

def test_run_text_with_markup_and_control_characters_shows_as_text(page: Any, inspector: str) -> None:
    open_run(page, inspector, "run-hostile")
    page.keyboard.press("ArrowRight")
    page.wait_for_selector('.step[data-k="1"]')
    assert page.evaluate("window.__pwned") is None
    for where in ("#conversation", "#step"):
        assert page.locator(f"{where} script, {where} img, {where} b").count() == 0
    text = visible(page, "#conversation")
    assert "<script>window.__pwned = 1</script> <b>bold?</b>" in text
    assert "\\x1b[31mred\\x1b[0m" in text and "\\u202egnp.exe" in text and "\x1b" not in text
    assert "<img src=x onerror=alert(1)>" in text and "\\x07 a bell" in text
    assert shown(HOSTILE) in text
    shot(page, "run-hostile")


def test_a_large_payload_is_cut_with_a_link_to_see_it_whole(page: Any, inspector: str, filled: Path) -> None:
    with SqliteDeliveryLog(filled, read_only=True) as log:
        result = next(d for d in log.replay("run-big-payload") if d.event_type == "TOOL_CALL_RESULT")
    open_run(page, inspector, "run-big-payload")
    page.fill("#step-number", str(result.source_position))
    page.press("#step-number", "Enter")
    page.wait_for_selector(f'.step[data-k="{result.source_position}"] .step-events .cut a')
    assert len(page.locator(".step-events pre").first.text_content()) < 4100
    whole = page.request.get(inspector + page.locator(".step-events .cut a").first.get_attribute("href"))
    assert whole.headers["content-type"].startswith("text/plain")
    assert json.loads(whole.text()) == json.loads(result.data)


# -- files ------------------------------------------------------------------------------------------

def test_the_files_are_the_journal_lines_the_events_and_the_delivery_log(page: Any, inspector: str,
                                                                          filled: Path) -> None:
    run_id = "run-b432af581d754332bc945baabbb683ae"

    async def items() -> list[Any]:
        with SqliteSourceJournal(filled, read_only=True) as journal:
            return [i async for i in journal.read_prefix(run_id, through=journal.cursor(run_id))]
    journal_lines = [encode(i) for i in in_thread(lambda: asyncio.run(items()))]
    with SqliteDeliveryLog(filled, read_only=True) as log:
        recorded = log.replay(run_id)
    open_run(page, inspector, run_id)
    got = {}
    for which in ("journal", "events", "deliveries"):
        with page.expect_download() as download:
            page.click(f"#download-{which}")
        got[which] = Path(download.value.path()).read_text(encoding="utf-8").splitlines()
    assert got["journal"] == journal_lines
    assert got["events"] == [d.data for d in recorded]
    assert [(r["sse_id"], r["source_position"], r["data"]) for r in map(json.loads, got["deliveries"])] == \
        [(d.sse_id, d.source_position, d.data) for d in recorded]
    command = page.locator("#notebook-command").inner_text()
    assert "steps(Path(" in command and "diagnose(" in command
    shot(page, "run-files")


# -- live -------------------------------------------------------------------------------------------

class SlowHarness:
    """Journals a Run's items one at a time in a thread of its own while ``project_run`` follows the
    journal and records their events: a Run being written by a Host while the inspector watches."""

    def __init__(self, database: Path, items: list[Any], *, pace: float) -> None:
        self.database, self.items, self.pace = database, items, pace
        self.holds: dict[int, threading.Event] = {}  # item n is journaled once holds[n] is set
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        try:
            journal = SqliteSourceJournal(self.database, synchronous="OFF", poll_interval=0.01)
            deliveries = SqliteDeliveryLog(self.database, synchronous="OFF")
            projector = threading.Thread(target=lambda: asyncio.run(project_run(
                self.items[0].run_id, journal, deliveries, poll_interval=0.01)), daemon=True)
            for n, item in enumerate(self.items):
                if n in self.holds:
                    self.holds[n].wait(60)
                journal.append(item)
                if n == 0:
                    projector.start()
                time.sleep(self.pace)
            projector.join(60)
            journal.close()
            deliveries.close()
        except BaseException as e:  # noqa: BLE001 - reported by the test
            self.error = e


def test_a_live_run_page_shows_new_text_as_it_arrives_and_after_a_reconnect_without_a_duplicate(
        page: Any, tmp_path: Path) -> None:
    database = tmp_path / "live.db"
    fill(database, [sample_runs()[0]])  # so the database exists with one ended Run
    words = [f"word{n:02d} " for n in range(40)]
    b = SourceBuilder("thread-live", "run-live")
    items = b.user("Count slowly.").request().text(0, words).completed("counted").items
    harness = SlowHarness(database, items, pace=0.05)
    # Items 3.. are the words: word08 is the last before the page opens, word26 the last before a restart.
    page_open, restarted = harness.holds[12], harness.holds[30] = threading.Event(), threading.Event()
    harness.thread.start()
    deadline = time.monotonic() + 30
    with SqliteDeliveryLog(database, read_only=True) as log:
        while log.last_event_id("run-live") < 10 and time.monotonic() < deadline:
            time.sleep(0.05)
    proc, url = start_inspector(database)
    try:
        open_run(page, url, "run-live")
        assert page.locator("#live-state").count() == 1
        first = int(page.locator("#run").get_attribute("data-events"))
        page_open.set()
        page.wait_for_function("() => document.querySelector('#conversation').innerText.includes('word20')",
                               timeout=30000)
        page.click("#live-reconnect")  # a reconnect asked for, after the last id the page holds
        page.wait_for_function("() => document.querySelector('#conversation').innerText.includes('word26')",
                               timeout=30000)
        # A forced one: the inspector goes away and comes back on the same port; the browser's EventSource
        # reconnects by itself after the retry hint, sending the last id it saw as Last-Event-ID.
        stop(proc)
        proc, _ = start_inspector(database, int(url.rsplit(":", 1)[1]))
        restarted.set()
        page.wait_for_function("() => document.querySelector('#live-state').textContent.includes('ended')",
                               timeout=30000)
        page.wait_for_function("() => document.querySelector('#conversation').innerText.includes('word39')",
                               timeout=30000)
        harness.thread.join(30)
        assert harness.error is None, harness.error
        ids = page.eval_on_selector_all("#live-events tr", "els => els.map(e => e.dataset.sseId)")
        numbers = [int(i.split(".")[0]) for i in ids]
        with SqliteDeliveryLog(database, read_only=True) as log:
            last = log.last_event_id("run-live")
        assert numbers == list(range(first + 1, last + 1))  # every event once, in order, none twice
        text = visible(page, "#conversation")
        assert text.count("word05") == 1 and text.count("word39") == 1
        assert "".join(words).strip() in text
        # The status is fetched once the end arrives: wait for that fetch, not only for the end's text.
        page.wait_for_function(
            "() => document.querySelector('#run-status [data-status]').dataset.status !== 'running'", timeout=30000)
        assert page.locator("#run-status [data-status]").get_attribute("data-status") == "finished"
        shot(page, "run-live")
    finally:
        page_open.set()
        restarted.set()
        page.goto("about:blank")
        stop(proc)


# -- a long Run -------------------------------------------------------------------------------------

def test_a_run_of_100000_events_opens_steps_and_records_its_first_paint(browser: Any, tmp_path: Path) -> None:
    # The time to first paint is written down (docs/inspector/long-run.txt, and the docs quote it), not asserted:
    # the machines are shared, and timings belong to figures, not to pass or fail.
    database = tmp_path / "long.db"
    fill(database, [long_run(100_000)])
    with SqliteDeliveryLog(database, read_only=True) as log:
        events = log.last_event_id("run-long")
    assert events >= 99_000
    proc, url = start_inspector(database)
    try:
        context = browser.new_context(viewport={"width": 1280, "height": 900})
        page = context.new_page()
        started = time.perf_counter()
        page.goto(f"{url}/run?id=run-long", wait_until="commit")
        page.wait_for_function("() => performance.getEntriesByName('first-contentful-paint').length > 0")
        paint = page.evaluate("performance.getEntriesByName('first-contentful-paint')[0].startTime") / 1000
        wall = time.perf_counter() - started
        # Responsive while the index is made: stepping works before the conversation is there.
        page.keyboard.press("ArrowRight")
        page.wait_for_selector('.step[data-k="1"]', timeout=120_000)
        stepped = time.perf_counter() - started
        page.wait_for_selector("#conversation .conversation-body", timeout=120_000)
        whole = time.perf_counter() - started
        page.fill("#step-number", str(events - 5))
        page.press("#step-number", "Enter")
        t = time.perf_counter()
        page.wait_for_selector(f'.step[data-k="{events - 5}"]', timeout=60_000)
        late_step = time.perf_counter() - t
        shot(page, "run-long")
        context.close()
    finally:
        stop(proc)
    report = (f"{events} events: first contentful paint {paint:.3f} s after navigation ({wall:.3f} s wall), "
              f"step 1 shown at {stepped:.2f} s, conversation (last entries) at {whole:.2f} s, "
              f"a step near the end {late_step:.2f} s")
    print(report)
    (SHOTS / "long-run.txt").write_text(report + "\n", encoding="utf-8")


# -- mounted in a Host's own app ------------------------------------------------------------------

def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_a_servers_inspector_asks_authorize_and_follows_a_run_through_the_servers_events_route(
        browser: Any, tmp_path: Path) -> None:
    import httpx

    port = free_port()
    log = (tmp_path / "server.log").open("w")
    proc = subprocess.Popen([sys.executable, str(Path(__file__).parent / "inspect_host.py"),
                             str(tmp_path / "host.db"), str(port)], stderr=log, stdout=subprocess.DEVNULL,
                            env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)})
    url = f"http://127.0.0.1:{port}"
    allowed = {"Authorization": "Bearer inspector-test"}
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                httpx.get(url + "/health", timeout=1)
                break
            except httpx.TransportError:
                if time.monotonic() > deadline:
                    pytest.fail("the server did not start: " + (tmp_path / "server.log").read_text())
                time.sleep(0.1)
        assert httpx.get(url + "/inspect/").status_code == 403  # no credentials: refused by authorize
        body = {"threadId": "client-thread", "runId": "client-run", "state": {}, "messages": [
            {"id": "u1", "role": "user", "content": "Count slowly."}], "tools": [], "context": [],
            "forwardedProps": {}}
        posted: list[str] = []
        client = threading.Thread(target=lambda: posted.append(httpx.post(
            url + "/runs", json=body, headers=allowed, timeout=60).text), daemon=True)
        client.start()
        context = browser.new_context(extra_http_headers=allowed, viewport={"width": 1280, "height": 900})
        page = context.new_page()
        deadline = time.monotonic() + 30
        while True:
            page.goto(url + "/inspect/")
            if page.locator('tr[data-run="client-run"]').count():
                break
            assert time.monotonic() < deadline, "the Run never appeared in the inspector"
            time.sleep(0.2)
        page.click('tr[data-run="client-run"] a.run-link')
        page.wait_for_selector("#conversation .conversation-body")
        assert page.locator("#run").get_attribute("data-follow") == \
            "/threads/client-thread/runs/client-run/events"  # the server's own route
        page.wait_for_function("() => document.querySelector('#live-state').textContent.includes('ended')",
                               timeout=30000)
        page.wait_for_function("() => document.querySelector('#conversation').innerText.includes('word39')",
                               timeout=30000)
        ids = page.eval_on_selector_all("#live-events tr", "els => els.map(e => e.dataset.sseId)")
        assert len(ids) == len(set(ids)) and ids
        client.join(60)
        shot(page, "served-run")
        context.close()
    finally:
        stop(proc)  # type: ignore[arg-type]
        log.close()
    asked = (tmp_path / "server.log").read_text()
    assert "authorize inspect client-run" in asked and "authorize follow client-run" in asked
