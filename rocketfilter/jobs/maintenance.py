"""``rocketfilter promote`` and ``rocketfilter backfill``: store maintenance from the command line.

    rocketfilter promote --store /data/rf-store --properties age,region
    rocketfilter backfill --store /data/rf-store [--topic OrderEvents]

Arguments and the store's existence (it is never created) are checked before Spark starts.
Progress is logged by the store operations; a one-line summary is printed at the end.
"""
from __future__ import annotations

import argparse
import logging
import sys
from typing import Optional, TextIO

from rocketfilter.jobs import common


def _names(text: str) -> list:
    names = [n.strip() for n in text.split(",") if n.strip()]
    if not names:
        raise argparse.ArgumentTypeError(f"names no property: {text!r}")
    return names


def add_promote_arguments(parser: argparse.ArgumentParser) -> None:
    common.add_store_argument(parser)
    parser.add_argument("--properties", required=True, type=_names, metavar="NAMES",
                        help="comma-separated property names to promote, e.g. age,region")
    common.add_spark_arguments(parser)
    parser.set_defaults(handler=promote_command)


def add_backfill_arguments(parser: argparse.ArgumentParser) -> None:
    common.add_store_argument(parser)
    parser.add_argument("--topic", action="append", default=None, type=common.topic_type,
                        help="a topic to backfill (repeatable; default: every registered topic)")
    common.add_spark_arguments(parser)
    parser.set_defaults(handler=backfill_command)


def register(subparsers) -> None:
    add_promote_arguments(subparsers.add_parser(
        "promote", help="parse properties once: typed CommitLog columns",
        description="rocketfilter promote: parse properties once into typed CommitLog columns, rewriting the "
                    "files that hold them."))
    add_backfill_arguments(subparsers.add_parser(
        "backfill", help="compute exact subscription bits for history",
        description="rocketfilter backfill: compute the registered subscriptions' exact bits over the "
                    "ConsumeQueue's history."))


def _open(args: argparse.Namespace, spark=None):
    common.peek_store(args)  # no store at the path: one line, before paying for a Spark start
    spark = common.start_spark(args, "rocketfilter-maintenance", spark)
    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stderr)
    return common.open_store(args, spark)


def promote_command(args: argparse.Namespace, spark=None, out: Optional[TextIO] = None) -> int:
    names = args.properties if isinstance(args.properties, list) else _names(args.properties)
    report = _open(args, spark).promote(names)
    print(f"promoted {report.promoted or 'nothing new'} (already: {report.already or 'none'}); "
          f"rewrote {report.files_rewritten} of {report.files_scanned} file(s), "
          f"{report.messages_rewritten} messages, in {report.seconds:.1f} s", file=out or sys.stdout)
    return 0


def backfill_command(args: argparse.Namespace, spark=None, out: Optional[TextIO] = None) -> int:
    done = _open(args, spark).backfill(args.topic)
    text = ", ".join(f"{t}: {n} entries" for t, n in done.items()) or "no registered subscription bits"
    print(f"backfilled {text}", file=out or sys.stdout)
    return 0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``promote`` and ``backfill`` under ``parser``, for :func:`main`."""
    commands = parser.add_subparsers(dest="maintenance_command", metavar="SUBCOMMAND", required=True,
                                     parser_class=type(parser))
    register(commands)


def main(argv=None, *, spark=None, prog: str = "rocketfilter maintenance") -> int:
    """The maintenance commands as a program of their own (``main(["promote", "--store", ...])``)."""
    return common.run_standalone(prog, common.first_line(__doc__), add_arguments, argv, spark)
