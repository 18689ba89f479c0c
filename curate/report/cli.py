"""The `curate report` subcommand, for `curate/cli.py` to register: `add_parser(subparsers)`."""

from __future__ import annotations

import argparse


def add_parser(subparsers) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "report", help="write a self-contained HTML report of a run (funnel, removals, signals, dedup, mixture)",
        description="Write one self-contained HTML page (no script, no network) about a run: the funnel per source, removals\n"
                    "by reason with example documents, quality signals against the thresholds, duplicate clusters side by\n"
                    "side, languages kept and removed, classifiers, dual-use, the mixture and packing, and time per stage.\n"
                    "Every `curate run` writes RUN/report.html itself; this re-writes it (or writes it elsewhere).",
        epilog="examples:\n  curate report runs/zyda2\n  curate report s3://bucket/runs/zyda2 --out zyda2.html",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("run", help="run directory (local path or fsspec URI)")
    p.add_argument("--out", "-o", help="the HTML file to write (local path or fsspec URI); default: RUN/report.html")
    p.set_defaults(func=main)
    return p


def main(args: argparse.Namespace) -> int:
    from curate.report import write_report

    print(f"wrote {write_report(args.run, args.out)}")
    return 0
