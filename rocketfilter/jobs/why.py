"""``rocketfilter why``: why a consumer group did, or did not, consume one message.

    rocketfilter why --store /data/rf --group-file g.json --msg-id C0A8010A00002A9F0000000000003BF4
    rocketfilter why --store /data/rf --group GID_orders --key order-42 [--topic T]
    rocketfilter why --store /data/rf --group-file g.json --topic T --queue 1 --offset 7 [--client-id C]

Prints :func:`rocketfilter.groups.explain_message.explain_message`'s trace: the verdict on the
first line, then each step. Arguments, the group file, a stored group's name, the form of a
``--msg-id`` and the store's existence are checked before Spark starts; errors are one line
(exit 2 for bad input, such as an unknown topic or a malformed ``--msg-id``; 1 for anything else,
such as a missing store). A trace exits 0 whatever its verdict but NOT_FOUND (a well-formed id,
key or position the store does not hold), which exits 4 (:data:`NOT_FOUND_EXIT`). A trace by
position or offset msgId, or a key scan of at most 256 MiB of CommitLog, is read from the Delta
files with pyarrow without starting Spark unless ``--master``/``--remote`` asks for it
(``--engine``, see :mod:`rocketfilter.jobs.engine`); the answers are the same. ``--conf``,
``--master``/``--remote`` and ``--verbose`` as for every command.
"""
from __future__ import annotations

import argparse
import re

from rocketfilter.jobs import common, engine

NAME = "why"
HELP = "why a consumer group did or did not consume one message"
NOT_FOUND_EXIT = 4
EPILOG = (f"Exit codes: 0 a trace (whatever its verdict but NOT_FOUND), {NOT_FOUND_EXIT} NOT_FOUND (the store "
          "does not hold the message), 2 bad input (such as a malformed --msg-id), 1 anything else.")
# An offset msgId (16 or 28 bytes: IPv4 or IPv6 host, port, commit-log offset) or a client's
# UNIQ_KEY (16 or 28 bytes from MessageClientIDSetter; 17 from a 5.x gRPC client: "01" + 16).
_MSG_ID = re.compile(r"[0-9A-Fa-f]{32}|[0-9A-Fa-f]{34}|[0-9A-Fa-f]{56}")
# CommitLog bytes that --engine auto scans with pyarrow for a key or a client's UNIQ_KEY.
SMALL_SCAN_BYTES = 256 << 20


def add_why_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``why`` command's arguments under ``parser``, its handler :func:`why_command`."""
    common.add_store_argument(parser)
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--group-file", metavar="FILE", help="a group file (.json, .yaml, .yml)")
    which.add_argument("--group", metavar="NAME", type=common.group_type,
                       help="a group stored in the store (save_group, or heartbeats)")
    parser.add_argument("--msg-id", help="the message's offset msgId (or the client's UNIQ_KEY)")
    parser.add_argument("--key", help="a key the message carries (KEYS); --topic narrows the search")
    parser.add_argument("--topic", type=common.topic_type,
                        help="the message's topic (with --queue and --offset, or with --key)")
    parser.add_argument("--queue", type=common.queue_id_type, metavar="Q", help="the message's queue id")
    parser.add_argument("--offset", type=common.offset_type, metavar="O", help="the message's queue offset")
    parser.add_argument("--client-id", help="trace this consumer (default: the one that came closest)")
    parser.add_argument("--max-msg-nums", type=common.max_msg_nums_type, default=32,
                        help="messages per pull (default 32)")
    engine.add_engine_argument(parser)
    common.add_spark_arguments(parser)
    parser.set_defaults(handler=why_command)


def register(subparsers) -> None:
    """Add ``why`` to the ``rocketfilter`` command (``rocketfilter.cli.COMMANDS``)."""
    add_why_arguments(subparsers.add_parser(NAME, help=HELP, description=common.first_line(__doc__),
                                            epilog=EPILOG))


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
    for name, value in (("--msg-id", args.msg_id), ("--key", args.key), ("--client-id", args.client_id)):
        if value is not None and not value.strip():
            raise ValueError(f"{name} is empty")
    if args.msg_id is not None:
        return {"msg_id": args.msg_id}
    if args.key is not None:
        return {"key": args.key, "topic": args.topic}
    return {"topic": args.topic, "queue_id": args.queue, "queue_offset": args.offset}


def _checked(args: argparse.Namespace):
    """(group or its name, lookup), every argument checked, the store and the topic found; no
    Spark yet."""
    from rocketfilter.consumer import ConsumerGroup

    lookup = _lookup(args)
    common.check_settings(args)
    group = ConsumerGroup.from_file(args.group_file) if args.group_file else args.group
    if args.client_id is not None and isinstance(group, ConsumerGroup) and args.client_id not in group.consumer_ids():
        raise ValueError(f"--client-id {args.client_id!r} is not a consumer of group {group.group!r} "
                         f"(consumers: {', '.join(group.consumer_ids()) or 'none'})")
    if args.msg_id is not None and not _MSG_ID.fullmatch(args.msg_id):
        raise ValueError(f"--msg-id {args.msg_id!r} is not a message id: an offset msgId (32 or 56 hex digits) "
                         "or a client's UNIQ_KEY (32, 34 or 56 hex digits) was expected")
    tables = common.peek_store(args)  # StoreNotFoundError before Spark starts
    if args.group is not None:
        common.require_group(tables, args.group)
    if args.topic is not None:
        common.require_topic(tables, args.topic)
    return group, lookup


def _small(args: argparse.Namespace, lookup: dict) -> bool:
    """Whether the lookup reads a few rows: a position, or an offset msgId the CommitLog holds
    (one point read each), or a scan (a key, a client's UNIQ_KEY) of at most SMALL_SCAN_BYTES."""
    from rocketfilter.groups.message_locate import point_read
    from rocketfilter.message import decode_offset_msg_id

    tables = common.peek_store(args)
    if "queue_id" in lookup:
        return True
    if "msg_id" in lookup:
        try:
            _, offset = decode_offset_msg_id(lookup["msg_id"])
        except ValueError:
            offset = None
        if offset is not None:
            rows = point_read(tables.commitlog, [("commitlog_offset", "=", offset)], ["msg_id"])
            if rows and (rows[0]["msg_id"] or "").upper() == lookup["msg_id"].upper():
                return True
    where = [("topic", "=", lookup["topic"])] if lookup.get("topic") else []
    return sum(f.size for f in tables.commitlog.files(where)) <= SMALL_SCAN_BYTES


def why_command(args: argparse.Namespace, spark=None) -> int:
    """Trace the message for parsed ``args`` and print it; returns the exit code."""
    group, lookup = _checked(args)
    from rocketfilter.groups.explain_message import explain_message

    store = None
    if engine.use_arrow(args, _small(args, lookup), spark):
        store = engine.open_store_without_spark(args, force=args.engine == "arrow")
    if store is None:
        spark = common.start_spark(args, "rocketfilter-why", spark)
        store = common.open_store(args, spark)
    trace = explain_message(store, group, client_id=args.client_id, max_msg_nums=args.max_msg_nums, **lookup)
    print(trace)
    return NOT_FOUND_EXIT if trace.verdict == "NOT_FOUND" else 0


def main(argv=None, *, spark=None, prog: str = "rocketfilter why") -> int:
    """``why`` as a program of its own (``main(["--store", ...])``)."""
    return common.run_standalone(prog, HELP, add_why_arguments, argv, spark)
