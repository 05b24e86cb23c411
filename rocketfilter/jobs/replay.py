"""``rocketfilter replay``: a topic replayed for one subscription, as a broker and its consumer would.

    rocketfilter replay --store /data/rf-store --topic OrderEvents --tags "TagA || TagB"
    rocketfilter replay --store s3://bucket/rf --topic OrderEvents --sql "amount > 100.0" \\
        --group GID_orders --output s3://bucket/replayed --summary

Every queue of the topic is pulled from its min offset to its max offset (or from
``--starting-offsets`` / ``--starting-timestamp`` to ``--ending-offsets``) with ``pull_sequence``
(the broker's getMessage loop, ``--max-msg-nums`` per pull) in one Spark job. A TAG subscription
then gets the client's exact tag re-check (the broker passes tag-code collisions such as
``Aa``/``BB``; the client drops them). An SQL92 subscription uses the group's registered filter
data (with its bloom bits) when the group registered this same selector, else a freshly compiled
one. Without ``--tags`` or ``--sql`` the subscription is ``*``. Each lint finding of the selector
(checked against a sample of the topic's newest messages) is a warning line on stderr.

Prints each delivered message (``--summary``: not), then one line per queue: delivered, pulls and
the last pull's next_begin_offset, then a total. ``--output`` writes the delivered messages with
their commit-log columns (and ``born_time``/``store_time`` timestamps) as parquet.
"""
from __future__ import annotations

import argparse
from typing import Optional, Sequence

from rocketfilter.jobs import common

NAME = "replay"
HELP = "replay a topic for one subscription with broker semantics"
DEFAULT_GROUP = "rocketfilter-replay"
# The entries' own columns, then every commit-log column but the ones both tables hold.
_ENTRY_COLUMNS = ("topic", "queue_id", "queue_offset", "commitlog_offset", "pull_number",
                  "next_begin_offset", "pull_status")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    common.add_store_argument(parser)
    parser.add_argument("--topic", required=True, type=common.topic_type, help="the topic to replay")
    common.add_selector_arguments(parser)
    parser.add_argument("--group", default=DEFAULT_GROUP, type=common.group_type,
                        help=f"the consumer group (its SQL92 filter data and bloom bits; default {DEFAULT_GROUP})")
    parser.add_argument("--max-msg-nums", type=common.max_msg_nums_type, default=32, metavar="N",
                        help="messages per pull (default 32)")
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--starting-offsets", type=_spec_type("--starting-offsets"), metavar="SPEC",
                       help="where each queue starts: earliest (default), latest, or JSON "
                            "'{\"TopicA\": {\"0\": 23, \"1\": -2}}' (-2 earliest, -1 latest)")
    where.add_argument("--starting-timestamp", type=_spec_type("--starting-timestamp", timestamp=True),
                       metavar="TIME", help="start each queue at its first message stored at or after TIME "
                                            "(epoch ms or ISO-8601, UTC when no zone)")
    parser.add_argument("--ending-offsets", type=_spec_type("--ending-offsets"), metavar="SPEC",
                        help="where each queue ends, excluded: latest (default), earliest, a time or JSON; pulls "
                             "are whole, so the last pull may carry messages past the end")
    parser.add_argument("--output", metavar="PATH", help="write the delivered messages as parquet here (overwrites)")
    parser.add_argument("--summary", action="store_true", help="print only the per-queue summary, not the messages")
    common.add_spark_arguments(parser)
    parser.set_defaults(handler=run)


def _spec_type(what: str, timestamp: bool = False):
    """An argparse type for a start or end spec (:mod:`rocketfilter.offsets_spec`), checked
    before Spark starts."""
    def parse(text: str):
        from rocketfilter.offsets_spec import parse_offsets

        try:
            spec = parse_offsets(text, what)
        except ValueError as error:
            raise argparse.ArgumentTypeError(str(error)) from None
        if timestamp and spec.kind != "timestamp":
            raise argparse.ArgumentTypeError(f"expected a time (epoch ms or ISO-8601), got {text!r}")
        return spec
    return parse


def register(subparsers) -> None:
    add_arguments(subparsers.add_parser(NAME, help=HELP, description=common.first_line(__doc__)))


def message_filter(store, sub, group: str):
    """The ``ExpressionMessageFilter`` a broker would pull ``sub`` with for ``group``."""
    from rocketfilter.pull.filter import ExpressionMessageFilter
    from rocketfilter.tags import is_tag_type

    if is_tag_type(sub.expression_type):
        return ExpressionMessageFilter(sub)
    if not store.broker_config.enable_property_filter:
        raise ValueError(f"The broker does not support consumer to filter message by {sub.expression_type} "
                         "(enablePropertyFilter=false)")
    manager = store.filter_manager
    data = manager.get(sub.topic, group)
    if data is None or data.is_dead() or data.expression != sub.sub_string or data.compiled is None:
        data = manager.build(sub.topic, group, sub.sub_string, sub.expression_type, sub.sub_version)
    return ExpressionMessageFilter(sub, data, manager)


def replay(store, sub, group: str, max_msg_nums: int, start=None, end=None):
    """``(delivered, pulls)`` DataFrames: the delivered messages joined with their commit-log
    columns (after the client's exact tag re-check), with ``born_time``/``store_time`` as Spark
    timestamps, and one row per pull. ``start``/``end``: as ``pull_sequence``'s
    ``start_offsets``/``end_offsets`` (None: each queue's min / max offset)."""
    from pyspark.sql import functions as F

    from rocketfilter.pull.batch import ENTRY_SCHEMA, PULL_SCHEMA
    from rocketfilter.pull.sequence import pull_sequence
    from rocketfilter.tag_columns import tag_exact_predicate

    spark, topic = store.spark, sub.topic
    if store.consumequeue_state().queues.get(topic):
        f = message_filter(store, sub, group)
        entries = pull_sequence(store, topic, f, max_msg_nums=max_msg_nums, start_offsets=start, end_offsets=end)
        pulls = pull_sequence(store, topic, f, max_msg_nums=max_msg_nums, start_offsets=start, end_offsets=end,
                              output="pulls")
    else:  # a topic without messages: nothing to pull
        entries, pulls = spark.createDataFrame([], ENTRY_SCHEMA), spark.createDataFrame([], PULL_SCHEMA)
    from rocketfilter.store.schema import COMMITLOG_SCHEMA

    # The message columns only: promoted property columns are the store's, not the output's.
    commitlog = store.commitlog.read(spark, where=[("topic", "=", topic)]).select(*COMMITLOG_SCHEMA.fieldNames())
    shared = set(_ENTRY_COLUMNS) | {"size"}
    rest = [c for c in commitlog.columns if c not in shared]
    # A merge join: Spark would size the pull loop's output from the ConsumeQueue's compressed
    # files and may broadcast millions of deliveries (see groups/outcomes.py).
    delivered = (entries.select(*_ENTRY_COLUMNS).hint("merge")
                 .join(commitlog.select("commitlog_offset", *rest), "commitlog_offset")
                 .select(*_ENTRY_COLUMNS, *rest,
                         F.timestamp_millis("born_timestamp").alias("born_time"),
                         F.timestamp_millis("store_timestamp").alias("store_time"))
                 .where(tag_exact_predicate(sub, F.col("tags"))))
    return delivered, pulls


def summary_lines(store, sub, delivered_counts: dict, pulls) -> list:
    """One line per readable queue, then a total."""
    from pyspark.sql import functions as F

    per_queue = {r["queue_id"]: r for r in pulls.groupBy("queue_id").agg(
        F.count(F.lit(1)).alias("pulls"), F.sum("message_count").alias("sent"),
        F.max_by("next_begin_offset", "pull_number").alias("next_begin_offset")).collect()}
    config = store.topic_config(sub.topic)
    queues = sorted(set(range(config.read_queue_nums)) | set(per_queue) | set(delivered_counts))
    lines = []
    for q in queues:
        row, got = per_queue.get(q), delivered_counts.get(q, 0)
        line = (f"queue {q}: delivered {got}, pulls {row['pulls'] if row else 0}, "
                f"next_begin_offset {row['next_begin_offset'] if row else '-'}")
        if row is not None and row["sent"] > got:  # tag-code collisions the broker sent
            line += f" ({row['sent'] - got} dropped by the client's exact tag check)"
        lines.append(line)
    total = sum(delivered_counts.values())
    pulled = sum(r["pulls"] for r in per_queue.values())
    lines.append(f"{sub.topic}: delivered {total} messages in {pulled} pulls from {len(queues)} queues "
                 f"({sub.expression_type} {sub.sub_string!r})")
    return lines


def print_messages(delivered, out=None) -> None:
    """The delivered messages as a table: queue, offset, msg_id, tags, keys, born and store time
    (timestamps in the session's time zone; an absent tag or key is an empty cell). The rows are
    streamed to the driver a partition at a time; one small query sizes the columns first."""
    from pyspark.sql import functions as F

    from rocketfilter.text_table import TIMESTAMP_FORMAT, WIDE_JAVA_REGEX, aligned, cell, width

    shown = (delivered.orderBy("queue_id", "queue_offset")
             .select(F.col("queue_id").cast("string").alias("queue"), F.col("queue_offset").cast("string").alias("offset"),
                     "msg_id", "tags", "keys",
                     F.date_format("born_time", TIMESTAMP_FORMAT).alias("born"),
                     F.date_format("store_time", TIMESTAMP_FORMAT).alias("stored")))
    # Display width: each East Asian wide character or emoji counts twice (WIDE_JAVA_REGEX).
    widest = shown.agg(*[F.max(F.length(F.regexp_replace(c, WIDE_JAVA_REGEX, "xx"))).alias(c)
                         for c in shown.columns]).first()
    if widest is None or widest["queue"] is None:
        return
    widths = [max(width(c), widest[c] or 0) for c in shown.columns]
    print(aligned(shown.columns, widths), file=out)
    print("  ".join("-" * w for w in widths), file=out)
    for row in shown.toLocalIterator():
        print(aligned([cell(v) for v in row], widths), file=out)


def _scanned(store, topic: str) -> int:
    """The ConsumeQueue entries a replay of ``topic`` walks: what its progress counts."""
    queues = store.consumequeue_state().queues.get(topic, {})
    return sum(hi - lo for lo, hi in queues.values())


def run(args: argparse.Namespace, spark=None) -> int:
    tables = common.peek_store(args)  # a missing store, bad settings: before Spark
    common.require_topic(tables, args.topic)
    sub = common.subscription(args, args.topic, common.known_properties(tables, args.topic))
    with common.command_progress(args, "replay") as display:
        spark = common.start_spark(args, "rocketfilter-replay", spark)
        store = common.open_store(args, spark)
        lines, delivered, counts = _replay(args, spark, store, sub, display)
    if not args.summary:
        print_messages(delivered)
    for line in lines:
        print(line)
    if args.output:
        print(f"wrote {sum(counts.values())} messages to {args.output}")
    delivered.unpersist()  # the caller's session may live on (a notebook, the tests)
    return 0


def _replay(args: argparse.Namespace, spark, store, sub, display):
    """The replay, counted (and written with --output): (summary lines, delivered, counts)."""
    from pyspark import StorageLevel

    from rocketfilter.spark_mode import persist_if_allowed

    start = args.starting_offsets or args.starting_timestamp
    delivered, pulls = replay(store, sub, args.group, args.max_msg_nums, start, args.ending_offsets)
    with common.progress_block(args, spark, "replay", display=display, unit="messages",
                               total=_scanned(store, args.topic), phase="replaying"):
        if args.output:
            delivered.write.mode("overwrite").parquet(args.output)
            delivered = spark.read.parquet(args.output)  # count what was written, not a second replay
        elif not args.summary:
            # Counted, then printed: replay once where the session caches (a Connect server
            # may refuse, as serverless does: then the listing replays again).
            persist_if_allowed(delivered, StorageLevel.MEMORY_AND_DISK)
        counts = {r["queue_id"]: r["count"] for r in delivered.groupBy("queue_id").count().collect()}
        lines = summary_lines(store, sub, counts, pulls)
    return lines, delivered, counts


def main(argv: Optional[Sequence[str]] = None, *, spark=None, prog: str = "rocketfilter replay") -> int:
    return common.run_standalone(prog, HELP, add_arguments, argv, spark)
