# How long `harness-agui serve app:agent` takes from its launch to answering, and how much of that is the app's
# own import (issue 39's "listening within 2 s"). Interleaved, in fresh processes, ``--repeats`` times:
#   - python: `python -c pass` (the interpreter's own start);
#   - floor: a process that imports a13n-harness and builds the agent (`harness_agui.a13n.demo:agent`, which
#     imports nothing else of harness-agui but the a13n package's release check) and prints a line: what any
#     app serving that agent pays first;
#   - serve (this tree) and, with ``--before TREE``, serve from another source tree (a `git archive` of an
#     earlier commit): `harness-agui serve APP --port 0` on a fresh SQLite file, timed from the launch to the
#     "serving" line, to the first accepted TCP connection and to the first 200 on GET /health.
# Every child may write bytecode (PYTHONDONTWRITEBYTECODE is dropped) and one discarded launch per tree comes
# first, so no module is compiled from source in a timed launch: as after `pip install`, which compiles them.
# Each child's CPU time (user + system, from /proc, up to the moment timed) is reported beside the wall time:
# on a shared machine the wall time follows the load, the CPU time much less.
#
# Results: bench/results/startup.md and startup.json.
#
#   .venv-a13n/bin/python -m bench.startup --repeats 5
#   .venv-a13n/bin/python -m bench.startup --before /tmp/before   # a tree from `git archive REV | tar -x -C`

from __future__ import annotations

import argparse
import json
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"
FLOOR = "from harness_agui.a13n.demo import agent; print('built', flush=True)"


def cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def healthy(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5) as s:
            s.sendall(b"GET /health HTTP/1.1\r\nHost: bench\r\nConnection: close\r\n\r\n")
            s.settimeout(30)
            return s.recv(64).startswith(b"HTTP/1.1 200")
    except OSError:
        return False


def child(python: str, tree: Path, args: list[str]) -> tuple[subprocess.Popen[str], float]:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    launched = time.perf_counter()
    process = subprocess.Popen([python, *args], cwd=tree, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True)
    return process, launched


def line_of(python: str, tree: Path, args: list[str]) -> dict[str, float]:
    """A child that prints a line when done: the time to that line."""
    process, launched = child(python, tree, args)
    assert process.stdout is not None
    said = process.stdout.readline()
    wall = time.perf_counter() - launched
    cpu = cpu_s(process.pid)
    process.wait(60)
    assert said or args == ["-c", "pass"], process.stderr and process.stderr.read()
    return {"wall_s": wall, "cpu_s": cpu}


def serve(python: str, tree: Path, app: str) -> dict[str, float]:
    folder = tempfile.mkdtemp()
    process, launched = child(python, tree, ["-m", "harness_agui", "serve", app, "--port", "0", "--db",
                                             f"{folder}/host.db"])
    assert process.stderr is not None
    try:
        said = process.stderr.readline()
        serving = time.perf_counter() - launched
        found = re.search(r"http://127\.0\.0\.1:(\d+)", said)
        assert found, said + process.stderr.read()
        port = int(found.group(1))
        # the port: harness-agui serve binds before it says where, so the connect time needs a second look
        while not healthy(port):
            assert process.poll() is None and time.perf_counter() - launched < 120, process.stderr.read()
            time.sleep(0.005)
        answered = time.perf_counter() - launched
        return {"serving_s": serving, "health_s": answered, "cpu_s": cpu_s(process.pid)}
    finally:
        process.kill()
        process.wait(30)


def listening(python: str, tree: Path, app: str) -> float:
    """Launch to the first accepted TCP connection, on a port chosen here (a second launch: the first one's
    port is known only once it says it)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    folder = tempfile.mkdtemp()
    process, launched = child(python, tree, ["-m", "harness_agui", "serve", app, "--port", str(port), "--db",
                                             f"{folder}/host.db"])
    try:
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                return time.perf_counter() - launched
            except OSError:
                assert process.poll() is None and time.perf_counter() - launched < 120
                time.sleep(0.002)
    finally:
        process.kill()
        process.wait(30)


def median(rows: list[dict[str, float]], key: str) -> float:
    return statistics.median(r[key] for r in rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--app", default="examples.a13n_agent:agent")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--before", type=Path, help="a source tree to compare (e.g. a git archive of main)")
    args = parser.parse_args()
    trees = {"serve": ROOT, **({"serve (before)": args.before} if args.before else {})}
    rows: dict[str, list[dict[str, float]]] = {"python": [], "floor": [], **{k: [] for k in trees}}
    connect: dict[str, list[float]] = {k: [] for k in trees}
    load = os.getloadavg()[0]
    for tree in trees.values():  # the discarded launch: bytecode written
        serve(args.python, tree, args.app)
    for _ in range(args.repeats):
        rows["python"].append(line_of(args.python, ROOT, ["-c", "pass"]))
        rows["floor"].append(line_of(args.python, ROOT, ["-c", FLOOR]))
        for name, tree in trees.items():
            rows[name].append(serve(args.python, tree, args.app))
            connect[name].append(listening(args.python, tree, args.app))
    out: dict[str, Any] = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "load_at_start": load,
                           "load_at_end": os.getloadavg()[0], "cores": os.cpu_count(), "app": args.app,
                           "repeats": args.repeats, "rows": rows, "connect_s": connect}
    lines = [f"# Start-up of `harness-agui serve {args.app}`", "",
             f"{out['date']}, {out['cores']} cores, load average {load:.1f} at the start and "
             f"{out['load_at_end']:.1f} at the end; medians of {args.repeats} interleaved launches "
             f"(`python -m bench.startup`). Wall seconds from the launch; CPU seconds of the child until then.", "",
             "| what | first accepted connection | \"serving\" line | first 200 on /health | CPU s |",
             "|---|---|---|---|---|",
             f"| python -c pass | | | {median(rows['python'], 'wall_s'):.2f} | {median(rows['python'], 'cpu_s'):.2f} |",
             f"| floor: import a13n-harness, build the agent | | | {median(rows['floor'], 'wall_s'):.2f} | "
             f"{median(rows['floor'], 'cpu_s'):.2f} |"]
    for name in trees:
        lines.append(f"| {name} | {statistics.median(connect[name]):.2f} | {median(rows[name], 'serving_s'):.2f} | "
                     f"{median(rows[name], 'health_s'):.2f} | {median(rows[name], 'cpu_s'):.2f} |")
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "startup.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (RESULTS / "startup.json").write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
