"""The `curate report` subcommand, for `curate/cli.py` to register: `add_parser(subparsers)`."""

from __future__ import annotations

import argparse


def add_parser(subparsers) -> argparse.ArgumentParser:
    p = subparsers.add_parser("report", help="write a self-contained HTML report of a run (funnel, removals, signals, dedup, mixture)")
    p.add_argument("run", help="run directory (local path or fsspec URI)")
    p.add_argument("--out", "-o", help="the HTML file to write (local path or fsspec URI); default: RUN/report.html")
    p.set_defaults(func=main)
    return p


def main(args: argparse.Namespace) -> int:
    from curate.report import write_report

    print(f"wrote {write_report(args.run, args.out)}")
    return 0
