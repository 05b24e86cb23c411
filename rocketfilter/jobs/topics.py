"""``rocketfilter topics``: a store's topics and queues, as ``mqadmin topicList`` and ``topicStatus``.

    rocketfilter topics --store /data/rf-store
    rocketfilter topics --store /data/rf-store --topic OrderEvents --json

Prints one row per queue: its min and max offset (``max`` is one past the last message, as
``maxOffsetInQueue``), how many messages it holds and the store times (UTC) of its first and
last message, then the totals. ``--json`` prints :func:`rocketfilter.store.describe.topic_status`
(times in ms since the epoch). Spark is not started: the offsets come from the ConsumeQueue's
state, the times from the row groups the Delta files' statistics point at.
"""
from __future__ import annotations

import argparse
import json
from typing import Optional, Sequence

from rocketfilter.jobs import common

NAME = "topics"
HELP = "list a store's topics with their queues, offsets, message counts and store times"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    common.add_store_argument(parser)
    parser.add_argument("--topic", type=common.topic_type, help="only this topic (default: every topic)")
    parser.add_argument("--json", action="store_true", help="print the answer as JSON")
    common.add_settings_argument(parser)
    parser.set_defaults(handler=run)


def register(subparsers) -> None:
    add_arguments(subparsers.add_parser(NAME, help=HELP, description=common.first_line(__doc__)))


def format_topics(status: list) -> str:
    """The queues of ``status`` (topic_status's answer) as a table, and a total line."""
    from rocketfilter.text_table import format_millis, format_table

    rows = [[t["topic"], q["queue_id"], q["min_offset"], q["max_offset"], q["messages"],
             format_millis(q["first_store_time"]), format_millis(q["last_store_time"])]
            for t in status for q in t["queues"]]
    total = sum(t["messages"] for t in status)
    lines = [format_table(["topic", "queue", "min", "max", "messages", "first stored (UTC)", "last stored (UTC)"],
                          rows)] if rows else []
    lines.append(f"{len(status)} topic{'' if len(status) == 1 else 's'}, {len(rows)} queues, {total} messages")
    return "\n".join(lines)


def run(args: argparse.Namespace, spark=None) -> int:
    from rocketfilter.store.describe import topic_status

    tables = common.peek_store(args)
    if args.topic is not None:
        common.require_topic(tables, args.topic)
    status = topic_status(tables, args.topic)
    print(json.dumps(status, indent=2, ensure_ascii=False) if args.json else format_topics(status))
    return 0


def main(argv: Optional[Sequence[str]] = None, *, spark=None, prog: str = "rocketfilter topics") -> int:
    return common.run_standalone(prog, HELP, add_arguments, argv, spark)
