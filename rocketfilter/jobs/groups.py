"""``rocketfilter groups diagnose`` and ``rocketfilter groups replay``: a consumer group (from a
group file or stored in the store) against a store's topic.

    rocketfilter groups diagnose --store /data/rf --group-file g.json [--topic T]
    rocketfilter groups replay --store /data/rf --group GID_orders --topic T [--output P] [--commit]

``diagnose`` prints :func:`rocketfilter.groups.diagnosis.diagnose_group`'s report. ``replay``
prints, per consumer and queue, how many messages it consumes and the last one's offset, then a total;
``--output`` writes the consumed messages (``replay_group``'s columns) as parquet, ``--commit``
stores the offsets where the consumers resume. Arguments, the group file and the store's
existence are checked before Spark starts; errors are one line (exit 2 for bad input, 1 for
anything else, such as a missing store), warnings one line each on stderr.
"""
from __future__ import annotations

import argparse
import warnings

from rocketfilter.jobs import common

NAME = "groups"
HELP = "replay or diagnose a consumer group on a store's topic"


def _common(parser: argparse.ArgumentParser, topic_required: bool) -> None:
    common.add_store_argument(parser)
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--group-file", metavar="FILE", help="a group file (.json, .yaml, .yml)")
    which.add_argument("--group", metavar="NAME", help="a group stored in the store (save_group, or heartbeats)")
    every = "" if topic_required else " (default: every topic the consumers subscribe)"
    parser.add_argument("--topic", required=topic_required, type=common.topic_type, help="the topic" + every)
    parser.add_argument("--max-msg-nums", type=common.positive_int("max-msg-nums"), default=32,
                        help="messages per pull (default 32)")
    common.add_spark_arguments(parser)
    parser.set_defaults(handler=groups_command)


def add_groups_arguments(parser: argparse.ArgumentParser) -> None:
    """``diagnose`` and ``replay`` under ``parser``."""
    commands = parser.add_subparsers(dest="groups_command", metavar="SUBCOMMAND", required=True,
                                     parser_class=type(parser))
    diagnose = commands.add_parser("diagnose", help="who subscribes what, who owns which queues, what is lost and why",
                                   description="Diagnose a consumer group on a store: who subscribes what, who "
                                               "owns which queues, which messages are lost and why.")
    _common(diagnose, topic_required=False)
    replay = commands.add_parser("replay", help="the messages each consumer of the group consumes",
                                 description="Replay a consumer group on a store's topic: the messages each of "
                                             "its consumers consumes.")
    _common(replay, topic_required=True)
    replay.add_argument("--output", help="write the consumed messages as parquet here (overwrites)")
    replay.add_argument("--commit", action="store_true",
                        help="store where each queue's consumer resumes as the group's consumer offset")


def register(subparsers) -> None:
    add_groups_arguments(subparsers.add_parser(NAME, help=HELP, description=common.first_line(__doc__)))


def _checked(args: argparse.Namespace):
    """The group file's group (or the name), after checking every argument; no Spark yet."""
    from rocketfilter.consumer import ConsumerGroup
    from rocketfilter.naming import validate_group

    common.check_settings(args)
    group = ConsumerGroup.from_file(args.group_file) if args.group_file else validate_group(args.group)
    tables = common.peek_store(args)  # StoreNotFoundError before Spark starts
    if args.group_file is None:
        common.require_group(tables, group)
    if args.topic is not None:
        common.require_topic(tables, args.topic)
    return group


def groups_command(args: argparse.Namespace, spark=None) -> int:
    """Run ``groups diagnose`` or ``groups replay`` for parsed ``args``; returns the exit code."""
    group = _checked(args)
    if not hasattr(args, "prog"):
        args.prog = f"rocketfilter groups {args.groups_command}"
    spark = common.start_spark(args, f"rocketfilter-groups-{args.groups_command}", spark)
    store = common.open_store(args, spark)

    def one_line(message, category, filename, lineno, file=None, line=None) -> None:
        common.warn(args, str(message))

    with warnings.catch_warnings():
        warnings.showwarning = one_line
        warnings.simplefilter("always", UserWarning)
        if args.groups_command == "diagnose":
            return _diagnose(store, group, args)
        return _replay(store, group, args)


def _diagnose(store, group, args) -> int:
    from rocketfilter.groups.diagnosis import diagnose_group

    print(diagnose_group(store, group, args.topic, max_msg_nums=args.max_msg_nums))
    return 0


def _replay(store, group, args) -> int:
    from pyspark.sql import functions as F

    from rocketfilter.groups.replay import replay_group

    rows = replay_group(store, group, args.topic, max_msg_nums=args.max_msg_nums, commit=args.commit)
    if args.output:
        rows.write.mode("overwrite").parquet(args.output)
        rows = store.spark.read.parquet(args.output)   # summarise what was written, not a second replay
    summary = (rows.groupBy("client_id", "queue_id")
               .agg(F.count(F.lit(1)).alias("n"), F.max("queue_offset").alias("last"))
               .orderBy("client_id", "queue_id").collect())
    name = group if isinstance(group, str) else group.group
    for r in summary:
        print(f"{r['client_id']} queue {r['queue_id']}: consumed {r['n']}, the last at offset {r['last']}")
    total = sum(r["n"] for r in summary)
    print(f"{name} on {args.topic}: {total} message(s) consumed by {len({r['client_id'] for r in summary})} "
          "consumer(s)" + (f"; written to {args.output}" if args.output else "")
          + ("; offsets committed" if args.commit else ""))
    return 0


def main(argv=None, *, spark=None, prog: str = "rocketfilter groups") -> int:
    """``groups`` as a program of its own (``main(["diagnose", "--store", ...])``)."""
    return common.run_standalone(prog, HELP, add_groups_arguments, argv, spark)
