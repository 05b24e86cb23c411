"""``rocketfilter why``: why a consumer group did, or did not, consume one message.

    rocketfilter why --store /data/rf --group-file g.json --msg-id C0A8010A00002A9F0000000000003BF4
    rocketfilter why --store /data/rf --group GID_orders --key order-42 [--topic T]
    rocketfilter why --store /data/rf --group-file g.json --topic T --queue 1 --offset 7 [--client-id C]

Prints :func:`rocketfilter.pull.explain_message.explain_message`'s trace: the verdict on the
first line, then each step. Arguments, the group file and the store's existence are checked
before Spark starts; errors are one line (exit 2 for bad input, 1 for anything else, such as a
missing store); a trace, whatever its verdict, exits 0.
"""
from __future__ import annotations

import argparse
from typing import Optional

from pyspark.sql import SparkSession

from rocketfilter.jobs.groups import _open_store, _positive_int


def _offset(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be at least 0, got {value}")
    return value


def add_why_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``why`` command's arguments under ``parser``."""
    parser.add_argument("--store", required=True, help="the rocketfilter store URI")
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--group-file", metavar="FILE", help="a group file (.json, .yaml, .yml)")
    which.add_argument("--group", metavar="NAME", help="a group stored in the store (save_group, or heartbeats)")
    parser.add_argument("--msg-id", help="the message's offset msgId (or the client's UNIQ_KEY)")
    parser.add_argument("--key", help="a key the message carries (KEYS); --topic narrows the search")
    parser.add_argument("--topic", help="the message's topic (with --queue and --offset, or with --key)")
    parser.add_argument("--queue", type=_offset, metavar="Q", help="the message's queue id")
    parser.add_argument("--offset", type=_offset, metavar="O", help="the message's queue offset")
    parser.add_argument("--client-id", help="trace this consumer (default: the one that came closest)")
    parser.add_argument("--max-msg-nums", type=_positive_int, default=32, help="messages per pull (default 32)")


def _lookup(args: argparse.Namespace) -> dict:
    """The message's lookup as explain_message's keyword arguments; ValueError when the
    arguments name none or several."""
    position = args.queue is not None or args.offset is not None
    given = [name for name, on in (("--msg-id", args.msg_id is not None), ("--key", args.key is not None),
                                   ("--topic/--queue/--offset", position)) if on]
    if len(given) != 1:
        raise ValueError("give exactly one of --msg-id ID, --key K, or --topic T --queue Q --offset O"
                         + (f" (got {', '.join(given)})" if given else ""))
    if position and (args.topic is None or args.queue is None or args.offset is None):
        raise ValueError("a message by position needs --topic, --queue and --offset together")
    if args.msg_id is not None and args.topic is not None:
        raise ValueError("--topic goes with --key or with --queue and --offset, not with --msg-id")
    if args.msg_id is not None:
        return {"msg_id": args.msg_id}
    if args.key is not None:
        return {"key": args.key, "topic": args.topic}
    return {"topic": args.topic, "queue_id": args.queue, "queue_offset": args.offset}


def _checked(args: argparse.Namespace):
    """(group or its name, lookup), every argument checked; no Spark yet."""
    from rocketfilter.consumer import ConsumerGroup
    from rocketfilter.naming import validate_group, validate_topic
    from rocketfilter.store.tables import store_exists

    lookup = _lookup(args)
    if args.topic is not None:
        validate_topic(args.topic)
    for name, value in (("--msg-id", args.msg_id), ("--key", args.key), ("--client-id", args.client_id)):
        if value is not None and not value.strip():
            raise ValueError(f"{name} is empty")
    group = ConsumerGroup.from_file(args.group_file) if args.group_file else validate_group(args.group)
    if args.client_id is not None and isinstance(group, ConsumerGroup) and args.client_id not in group.consumer_ids():
        raise ValueError(f"--client-id {args.client_id!r} is not a consumer of group {group.group!r} "
                         f"(consumers: {', '.join(group.consumer_ids()) or 'none'})")
    if not store_exists(args.store):
        from rocketfilter.store import StoreNotFoundError

        raise StoreNotFoundError(f"no rocketfilter store at {args.store} (no commitlog Delta table there)")
    return group, lookup


def why_command(args: argparse.Namespace, spark: Optional[SparkSession] = None) -> int:
    """Trace the message for parsed ``args`` and print it; returns the exit code."""
    group, lookup = _checked(args)
    from rocketfilter.pull.explain_message import explain_message
    from rocketfilter.session import get_spark

    spark = get_spark(spark, app_name="rocketfilter-why")
    store = _open_store(args.store, spark)
    print(explain_message(store, group, client_id=args.client_id, max_msg_nums=args.max_msg_nums, **lookup))
    return 0


def register(subparsers) -> None:
    """Add ``why`` to the command line's subcommands (``rocketfilter.cli``'s ``COMMANDS``)."""
    parser = subparsers.add_parser("why", help="why a consumer group did or did not consume one message")
    add_why_arguments(parser)
    parser.set_defaults(handler=why_command)
