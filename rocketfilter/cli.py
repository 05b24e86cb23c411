"""The ``rocketfilter`` command: one subcommand per module of :mod:`rocketfilter.jobs`.

It never shows a traceback: errors become one line on stderr, ``rocketfilter <command>: error:
...``, exit 2 for bad input (usage, a ValueError such as a selector syntax error or an unknown
topic), 1 for anything else (a missing store, a failed Spark job); ``rocketfilter lint`` exits 1
for findings. Arguments, settings, selectors and the store's existence are checked before Spark
starts.

A session a command starts does not get the ``rocketmq`` data source (no command reads
through it; registering it costs 3 to 5 s): :func:`rocketfilter.jobs.common.run_handler`.

Commands are modules: each exposes ``register(subparsers)``, which adds its parser and sets
``handler(args, spark=None) -> int`` on it. Adding a command is adding its module to ``COMMANDS``.
"""
from __future__ import annotations

import argparse
import importlib
import sys
from typing import Optional, Sequence

from rocketfilter.jobs.common import OneLineArgumentParser, exit_code, guarded, run_handler

__all__ = ["main", "build_parser", "guarded", "OneLineArgumentParser", "COMMANDS"]

# The job modules under rocketfilter.jobs, in the order `rocketfilter --help` lists them.
COMMANDS = ("demo", "import_store", "topics", "describe", "replay", "pull", "offsets", "lint", "groups", "why",
            "maintenance")


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("rocketfilter")
    except PackageNotFoundError:
        return "unknown (not installed)"


def build_parser(prog: str = "rocketfilter", commands: Sequence[str] = COMMANDS) -> argparse.ArgumentParser:
    """The parser of every command in ``commands`` (module names under rocketfilter.jobs)."""
    parser = OneLineArgumentParser(prog=prog, description="RocketMQ message filtering on Spark and Delta.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=OneLineArgumentParser)
    for name in commands:
        importlib.import_module(f"rocketfilter.jobs.{name}").register(subparsers)
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    prog = "rocketfilter"
    try:
        parser = build_parser(prog)
        args = parser.parse_args(argv)
    except SystemExit as done:  # --help, --version, a usage error (already printed)
        return exit_code(done)
    except Exception as exc:  # noqa: BLE001 - e.g. a broken install: still one line
        print(f"{prog}: error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    if args.command is None:
        parser.print_help(sys.stderr)
        return 2
    args.prog = getattr(args, "command_prog", None) or f"{prog} {args.command}"
    return guarded(args.prog, lambda: run_handler(args), verbose=getattr(args, "verbose", False))


if __name__ == "__main__":
    sys.exit(main())
