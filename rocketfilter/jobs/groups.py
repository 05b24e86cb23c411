"""``rocketfilter groups diagnose`` and ``rocketfilter groups replay``: a consumer group (from a
group file or stored in the store) against a store's topic.

    rocketfilter groups diagnose --store /data/rf --group-file g.json [--topic T]
    rocketfilter groups replay --store /data/rf --group GID_orders --topic T [--output P] [--commit]

``diagnose`` prints :func:`rocketfilter.pull.group_diagnosis.diagnose_group`'s report. ``replay``
prints, per consumer and queue, how many messages it consumes and the last one's offset, then a total;
``--output`` writes the consumed messages (``replay_group``'s columns) as parquet, ``--commit``
stores the offsets where the consumers resume. Arguments, the group file and the store's
existence are checked before Spark starts; errors are one line (exit 2 for bad input, 1 for
anything else, such as a missing store), warnings one line each on stderr.
"""
from __future__ import annotations

import argparse
import sys
import warnings
from typing import Optional

from pyspark.sql import SparkSession


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _common(parser: argparse.ArgumentParser, topic_required: bool) -> None:
    parser.add_argument("--store", required=True, help="the rocketfilter store URI")
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--group-file", metavar="FILE", help="a group file (.json, .yaml, .yml)")
    which.add_argument("--group", metavar="NAME", help="a group stored in the store (save_group, or heartbeats)")
    every = "" if topic_required else " (default: every topic the consumers subscribe)"
    parser.add_argument("--topic", required=topic_required, help="the topic" + every)
    parser.add_argument("--max-msg-nums", type=_positive_int, default=32, help="messages per pull (default 32)")


def add_groups_arguments(parser: argparse.ArgumentParser) -> None:
    """``diagnose`` and ``replay`` under ``parser``."""
    commands = parser.add_subparsers(dest="groups_command", metavar="SUBCOMMAND", required=True,
                                     parser_class=type(parser))
    diagnose = commands.add_parser("diagnose", help="who subscribes what, who owns which queues, what is lost and why")
    _common(diagnose, topic_required=False)
    replay = commands.add_parser("replay", help="the messages each consumer of the group consumes")
    _common(replay, topic_required=True)
    replay.add_argument("--output", help="write the consumed messages as parquet here (overwrites)")
    replay.add_argument("--commit", action="store_true",
                        help="store where each queue's consumer resumes as the group's consumer offset")


def _checked(args: argparse.Namespace):
    """The group file's group (or the name), after checking every argument; no Spark yet."""
    from rocketfilter.consumer import ConsumerGroup
    from rocketfilter.naming import validate_group, validate_topic
    from rocketfilter.store.tables import store_exists

    if args.topic is not None:
        validate_topic(args.topic)
    group = ConsumerGroup.from_file(args.group_file) if args.group_file else validate_group(args.group)
    if not store_exists(args.store):
        from rocketfilter.store import StoreNotFoundError

        raise StoreNotFoundError(f"no rocketfilter store at {args.store} (no commitlog Delta table there)")
    return group


def _open_store(uri: str, spark: SparkSession):
    """The existing store, with broker and store settings from ``spark.rocketfilter.*``."""
    from rocketfilter.config import load_broker_conf
    from rocketfilter.store import MessageStore

    broker_config, store_config = load_broker_conf(spark_conf=spark)
    return MessageStore.open(uri, spark, store_config, broker_config=broker_config, create=False)


def _warn_in_one_line(message, category, filename, lineno, file=None, line=None) -> None:
    print(f"rocketfilter groups: warning: {message}", file=sys.stderr)


def groups_command(args: argparse.Namespace, spark: Optional[SparkSession] = None) -> int:
    """Run ``groups diagnose`` or ``groups replay`` for parsed ``args``; returns the exit code."""
    group = _checked(args)
    from rocketfilter.session import get_spark

    spark = get_spark(spark, app_name=f"rocketfilter-groups-{args.groups_command}")
    store = _open_store(args.store, spark)
    with warnings.catch_warnings():
        warnings.showwarning = _warn_in_one_line
        warnings.simplefilter("always", UserWarning)
        if args.groups_command == "diagnose":
            return _diagnose(store, group, args)
        return _replay(store, group, args)


def _diagnose(store, group, args) -> int:
    from rocketfilter.pull.group_diagnosis import diagnose_group

    print(diagnose_group(store, group, args.topic, max_msg_nums=args.max_msg_nums))
    return 0


def _replay(store, group, args) -> int:
    from pyspark.sql import functions as F

    from rocketfilter.pull.group_replay import replay_group

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
