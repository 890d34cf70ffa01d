"""The ``harness-agui`` command line."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from .demo import run_demo


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="harness-agui", description="Project Harness runs onto AG-UI events.")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("demo", help="observe, interrupt, resume and check a simulated run")
    args = parser.parse_args(argv)
    if args.command == "demo":
        return run_demo(sys.stdout)
    parser.error(f"unknown command {args.command}")
    return 2
