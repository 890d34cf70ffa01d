# The multi-worker benchmark: how many source items per second a Host on one
# PostgreSQL database journals and projects with 1, 2 and 3 worker processes,
# and how long a dead or hung worker's Runs wait before another takes them.
#
# Everything runs on this machine against a throwaway server
# (``TemporaryPostgres``: fsync off, so the figures are of the kit and the
# server's CPU, not of a disk). Measures:
#
#   - journal: items per second appended by 1 and 4 threads of one process
#     (one transaction per append, as a Harness ingest does), R Runs at once;
#   - projection: R Runs journaled beforehand, then N worker processes
#     (tests/pg_worker.py: a ``Worker`` each, each taking at most its share
#     of the Runs) started together; items per second from the moment all
#     are up until every Run's terminal events are recorded (project_run:
#     observe, then one transaction per item with its events and the
#     cursor). The median of ``--repeats``;
#   - takeover after SIGKILL: one worker projects a live Run, a second one
#     idles; the first is SIGKILLed and the next item journaled at once; the
#     delay until its events are recorded (by the second worker: the dead
#     worker's liveness lock went with its connection, so it is found at the
#     next scan, every 0.2 s here);
#   - takeover after a hang: the same with SIGSTOP instead of SIGKILL; the
#     hung worker still holds its connection, so the lease must expire
#     (ttl 2 s here). The stopped worker is then continued: its next record
#     is refused by the fence, and the log is checked to be whole.
#
# Results: bench/results/workers.md and workers.json.
#
#   .venv/bin/python -m bench.workers                   # about a minute
#   .venv/bin/python -m bench.workers --runs 40 --rounds 8 --repeats 3

from __future__ import annotations

import argparse
import json
import os
import platform
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from harness_agui import HarnessAguiObserver, HarnessStreamEvent
from harness_agui.host.postgres import PostgresDeliveryLog, PostgresSourceJournal
from harness_agui.testing import SourceBuilder
from harness_agui.testing.postgres import TemporaryPostgres
from harness_agui.wire.agui import agui_to_json

ROOT = Path(__file__).resolve().parent.parent
WORKER = ROOT / "tests" / "pg_worker.py"
RESULTS = ROOT / "bench" / "results"


def a_run(run_id: str, rounds: int) -> list[HarnessStreamEvent]:
    b = SourceBuilder(f"thread-{run_id}", run_id)
    b.user("Plan a walking tour, one stop per round.")
    for r in range(rounds):
        b.request()
        b.thinking(0, [f"Round {r}: ", "choose ", "the ", "next ", "stop ", "near ", "the ", "last ", "one."])
        b.text(1, [f"Stop {r + 1} ", "is ", "a ", "short ", "walk ", "away; ", "let ", "me ", "check ", "hours."])
        b.tool_call(2, "opening_hours", f"call-{r}", ['{"place": ', f'"stop-{r + 1}", ', '"day": ', '"sunday"}'])
        b.tool_result(f"call-{r}", "opening_hours", {"open": "09:00", "stop": r + 1})
        b.observation("progress", {"round": r})
    b.completed({"stops": rounds})
    return b.items


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def spawn_worker(url: str, *, ttl: float = 5.0, max_runs: int = 1000) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, str(WORKER), url, str(free_port()), "--ttl", str(ttl),
                             "--scan", "0.2", "--max-runs", str(max_runs)],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)


def ready(process: subprocess.Popen[str]) -> subprocess.Popen[str]:
    assert process.stdout is not None
    if process.stdout.readline().strip() != "ready":
        raise RuntimeError("a worker did not start")
    return process


def start_worker(url: str, *, ttl: float = 5.0, max_runs: int = 1000) -> subprocess.Popen[str]:
    return ready(spawn_worker(url, ttl=ttl, max_runs=max_runs))


def stop(process: subprocess.Popen[str]) -> None:
    if process.poll() is None:
        os.kill(process.pid, signal.SIGKILL)
    process.wait()


def progress(url: str) -> tuple[int, int]:
    """(Runs whose terminal events are recorded, items whose events are recorded)."""
    import psycopg

    with psycopg.connect(url) as conn:
        row = conn.execute("SELECT count(*) FILTER (WHERE finished), coalesce(sum(source_cursor + 1), 0) "
                           "FROM harness_agui_delivery_runs").fetchone()
    assert row is not None
    return int(row[0]), int(row[1])


def journal_rate(pg: TemporaryPostgres, runs: int, rounds: int, threads: int) -> float:
    url = pg.create_database(f"journal_{threads}_{time.monotonic_ns()}")
    items = {f"run-{n}": a_run(f"run-{n}", rounds) for n in range(runs)}
    ids = sorted(items)
    with PostgresSourceJournal(url, pool_size=threads) as journal:
        def feed(mine: list[str]) -> None:
            for step in range(max(len(v) for v in items.values())):
                for run_id in mine:
                    if step < len(items[run_id]):
                        journal.append(items[run_id][step])

        started = time.perf_counter()
        workers = [threading.Thread(target=feed, args=(ids[k::threads],)) for k in range(threads)]
        for w in workers:
            w.start()
        for w in workers:
            w.join()
        elapsed = time.perf_counter() - started
    return sum(len(v) for v in items.values()) / elapsed


def projection_rate(pg: TemporaryPostgres, workers: int, runs: int, rounds: int) -> float:
    url = pg.create_database(f"project_{workers}_{time.monotonic_ns()}")
    items = {f"run-{n}": a_run(f"run-{n}", rounds) for n in range(runs)}
    with PostgresSourceJournal(url, pool_size=4) as journal:
        for step in range(max(len(v) for v in items.values())):
            for run_id in sorted(items):
                if step < len(items[run_id]):
                    journal.append(items[run_id][step])
    per_worker = -(-runs // workers)  # spread the Runs: a worker takes at most its share
    processes = []
    try:
        processes = [spawn_worker(url, max_runs=per_worker) for _ in range(workers)]
        for p in processes:
            ready(p)
        started = time.perf_counter()  # from when every worker is up: start-up is not projection
        _, before = progress(url)
        while progress(url)[0] < runs:
            time.sleep(0.02)
        elapsed = time.perf_counter() - started
    finally:
        for p in processes:
            stop(p)
    return (sum(len(v) for v in items.values()) - before) / elapsed


def takeover_delay(pg: TemporaryPostgres, how: str, ttl: float) -> dict[str, Any]:
    url = pg.create_database(f"takeover_{how}_{time.monotonic_ns()}")
    items = a_run("run-live", 4)
    observer = HarnessAguiObserver()
    expected = [agui_to_json(e) for item in items for e in observer.observe(item)]
    journal = PostgresSourceJournal(url)
    log = PostgresDeliveryLog(url)
    first = start_worker(url, ttl=ttl)
    second = None
    try:
        for item in items[:20]:
            journal.append(item)
        while log.cursor("run-live") != 19:
            time.sleep(0.005)
        second = start_worker(url, ttl=ttl)  # idle: the first holds the only Run
        time.sleep(0.5)
        os.kill(first.pid, signal.SIGKILL if how == "sigkill" else signal.SIGSTOP)
        killed = time.perf_counter()
        journal.append(items[20])
        while log.cursor("run-live") != 20:
            time.sleep(0.002)
        delay = time.perf_counter() - killed
        if how == "sigstop":
            os.kill(first.pid, signal.SIGCONT)  # it wakes up believing it holds the Run: fenced out
        for item in items[21:]:
            journal.append(item)
        while not log.finished("run-live"):
            time.sleep(0.005)
        whole = [d.data for d in log.replay("run-live")] == expected
    finally:
        stop(first)
        if second is not None:
            stop(second)
        journal.close()
        log.close()
    return {"delay_s": delay, "log_whole": whole}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--ttl", type=float, default=2.0)
    args = parser.parse_args()
    results: dict[str, Any] = {
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
        "runs": args.runs, "items_per_run": len(a_run("x", args.rounds)), "repeats": args.repeats,
        "load": " ".join(f"{x:.1f}" for x in os.getloadavg()),
    }
    with TemporaryPostgres() as pg:
        results["server"] = subprocess.run([os.path.join(pg._bin or "", "postgres"), "--version"],
                                           capture_output=True, text=True).stdout.strip()
        results["journal_items_per_s"] = {
            str(t): statistics.median(journal_rate(pg, args.runs, args.rounds, t) for _ in range(args.repeats))
            for t in (1, 4)}
        print("journal", results["journal_items_per_s"], flush=True)
        results["projected_items_per_s"] = {
            str(n): statistics.median(projection_rate(pg, n, args.runs, args.rounds) for _ in range(args.repeats))
            for n in (1, 2, 3)}
        print("projected", results["projected_items_per_s"], flush=True)
        kills = [takeover_delay(pg, "sigkill", args.ttl) for _ in range(args.repeats)]
        hangs = [takeover_delay(pg, "sigstop", args.ttl) for _ in range(args.repeats)]
        results["takeover_after_sigkill_s"] = [round(k["delay_s"], 3) for k in kills]
        results["takeover_after_sigstop_s"] = [round(h["delay_s"], 3) for h in hangs]
        results["ttl_s"] = args.ttl
        results["logs_whole"] = all(r["log_whole"] for r in kills + hangs)
        print("takeover", results["takeover_after_sigkill_s"], results["takeover_after_sigstop_s"],
              results["logs_whole"], flush=True)
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "workers.json").write_text(json.dumps(results, indent=2) + "\n")
    (RESULTS / "workers.md").write_text(report(results))
    print(report(results))


def report(r: dict[str, Any]) -> str:
    j, p = r["journal_items_per_s"], r["projected_items_per_s"]
    lines = [
        "# Many workers on one PostgreSQL database",
        "",
        f"`python -m bench.workers` on {r['machine']}, {r['server']} (a throwaway server, fsync off), "
        f"{r['runs']} Runs of {r['items_per_run']} items, median of {r['repeats']}. The 2 cores are shared by the "
        "server, the workers and this script (and, on a busy machine, others), so more workers cannot add "
        "cores here: read the columns as what one database and one small machine sustain, not as a "
        f"scaling curve. Load average when it started: {r.get('load', '?')}.",
        "",
        "| measure | items per second |",
        "|---|---|",
        f"| journal, 1 thread (one transaction per item) | {j['1']:,.0f} |",
        f"| journal, 4 threads | {j['4']:,.0f} |",
        f"| journaled backlog projected by 1 worker | {p['1']:,.0f} |",
        f"| ... by 2 workers | {p['2']:,.0f} |",
        f"| ... by 3 workers | {p['3']:,.0f} |",
        "",
        "| takeover | delay (s), each repeat |",
        "|---|---|",
        f"| worker SIGKILLed (its liveness lock goes with its connection; next scan, 0.2 s) | "
        f"{', '.join(map(str, r['takeover_after_sigkill_s']))} |",
        f"| worker hung (SIGSTOP: its lease must expire, ttl {r['ttl_s']} s, last renewed up to ttl/3 before) | "
        f"{', '.join(map(str, r['takeover_after_sigstop_s']))} |",
        "",
        f"After every takeover the delivery log held exactly the uninterrupted projection: {r['logs_whole']} "
        "(the hung worker, continued after the takeover, was fenced out).",
        "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
