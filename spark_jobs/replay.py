"""spark-submit entry point: replay a topic for one subscription, as a broker and its consumer would.

    spark-submit spark_jobs/replay.py --store /data/rf-store --topic OrderEvents --tags "TagA || TagB"
    spark-submit spark_jobs/replay.py --store s3://bucket/rf --topic OrderEvents --sql "amount > 100" \\
        --group GID_orders --output s3://bucket/replayed --summary

Every queue of the topic is pulled from its min offset to its max offset with ``pull_sequence``
(the broker's getMessage loop, ``--max-msg-nums`` per pull) in one Spark job. A TAG subscription
then gets the client's exact tag re-check (the broker passes tag-code collisions such as
``Aa``/``BB``; the client drops them). An SQL92 subscription uses the group's registered filter
data (with its bloom bits) when the group registered this same selector, else a freshly compiled
one. Without ``--tags`` or ``--sql`` the subscription is ``*``. ``spark.rocketfilter.*`` Spark conf
keys set the broker and store settings (docs/configuration.md).

Prints each delivered message (``--summary``: not), then one line per queue: delivered, pulls and
the last pull's next_begin_offset, then a total. ``--output`` writes the delivered messages with
their commit-log columns as parquet. Errors are one line on stderr: exit 2 for bad input (a
selector syntax error, an unknown topic), 1 for a missing store. There is never a traceback.
Spark's own log lines are hidden unless ``--verbose``.
"""
import os
import sys

try:
    import rocketfilter  # noqa: F401
except ImportError:  # a plain checkout: use the package next to this folder
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from rocketfilter.cli import OneLineArgumentParser, add_verbose_argument, guarded  # noqa: E402

DEFAULT_GROUP = "rocketfilter-replay"
# The entries' own columns, then every commit-log column but the ones both tables hold.
_ENTRY_COLUMNS = ("topic", "queue_id", "queue_offset", "commitlog_offset", "pull_number",
                  "next_begin_offset", "pull_status")


def _positive_int(text: str) -> int:
    import argparse

    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _text(value):
    """A tag or key for a one-line message listing: quoted when it holds a line break or the like."""
    return value if value is None or value.isprintable() else repr(value)


def build_parser() -> OneLineArgumentParser:
    parser = OneLineArgumentParser(prog="replay.py",
                                   description="Replay a topic for one subscription with broker semantics.")
    parser.add_argument("--store", required=True, help="the rocketfilter store URI")
    parser.add_argument("--topic", required=True, help="the topic to replay")
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--tags", help='a TAG subscription, e.g. "TagA || TagB" (default: "*")')
    which.add_argument("--sql", help='an SQL92 selector, e.g. "amount > 100 AND region = \'eu\'"')
    parser.add_argument("--group", default=DEFAULT_GROUP,
                        help=f"the consumer group (its SQL92 filter data and bloom bits; default {DEFAULT_GROUP})")
    parser.add_argument("--max-msg-nums", type=_positive_int, default=32, help="messages per pull (default 32)")
    parser.add_argument("--output", help="write the delivered messages as parquet here (overwrites)")
    parser.add_argument("--summary", action="store_true", help="print only the per-queue summary, not the messages")
    add_verbose_argument(parser)
    return parser


def subscription(args):
    """The subscription the replay pulls with; ValueError for what RocketMQ would refuse."""
    from rocketfilter.config import validate_group, validate_topic
    from rocketfilter.selector import parse
    from rocketfilter.tags import build_subscription

    validate_group(args.group)
    validate_topic(args.topic)
    if args.sql is not None:
        parse(args.sql)  # a syntax error stops here, before any Spark work
        return build_subscription(args.topic, args.sql, "SQL92")
    return build_subscription(args.topic, "*" if args.tags is None else args.tags)


def require_store(uri: str) -> None:
    """FileNotFoundError unless ``uri`` holds a store (opening one would create it)."""
    from deltalake import DeltaTable

    path = uri if "://" in uri else os.path.abspath(os.path.expanduser(uri))
    if not DeltaTable.is_deltatable(f"{path.rstrip('/')}/commitlog"):
        raise FileNotFoundError(f"no rocketfilter store at {uri} (no commitlog Delta table)")


def open_store(uri: str, spark):
    """The existing store at ``uri``, with broker and store settings from ``spark.rocketfilter.*``."""
    from rocketfilter.config import load_broker_conf
    from rocketfilter.store import MessageStore

    require_store(uri)
    broker_config, store_config = load_broker_conf(spark_conf=spark)
    return MessageStore.open(uri, spark, store_config, broker_config=broker_config)


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


def replay(store, sub, group: str, max_msg_nums: int):
    """``(delivered, pulls)`` DataFrames: the delivered messages joined with their commit-log
    columns (after the client's exact tag re-check), and one row per pull."""
    from pyspark.sql import functions as F

    from rocketfilter.pull.batch import ENTRY_SCHEMA, PULL_SCHEMA
    from rocketfilter.pull.sequence import pull_sequence
    from rocketfilter.tags import tag_exact_predicate

    spark, topic = store.spark, sub.topic
    if store.consumequeue_state().queues.get(topic):
        f = message_filter(store, sub, group)
        entries = pull_sequence(store, topic, f, max_msg_nums=max_msg_nums)
        pulls = pull_sequence(store, topic, f, max_msg_nums=max_msg_nums, output="pulls")
    else:  # a topic without messages: nothing to pull
        entries, pulls = spark.createDataFrame([], ENTRY_SCHEMA), spark.createDataFrame([], PULL_SCHEMA)
    from rocketfilter.store.schema import COMMITLOG_SCHEMA

    commitlog = store.commitlog.read(spark, where=[("topic", "=", topic)]).select(*COMMITLOG_SCHEMA.fieldNames())
    shared = set(_ENTRY_COLUMNS) | {"size"}
    delivered = (entries.select(*_ENTRY_COLUMNS)
                 .join(commitlog.select("commitlog_offset", *[c for c in commitlog.columns if c not in shared]),
                       "commitlog_offset")
                 .select(*_ENTRY_COLUMNS, *[c for c in commitlog.columns if c not in shared])
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


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)

    def run() -> int:
        sub = subscription(args)  # bad input fails before Spark starts
        require_store(args.store)

        from rocketfilter.session import get_spark

        spark = get_spark(app_name="rocketfilter-replay", verbose=args.verbose)
        store = open_store(args.store, spark)
        if store.topic_config(args.topic) is None:
            known = ", ".join(sorted(store.topics())) or "none"
            raise ValueError(f"topic {args.topic!r} does not exist in store {args.store} (topics: {known})")
        delivered, pulls = replay(store, sub, args.group, args.max_msg_nums)
        if args.output:
            delivered.write.mode("overwrite").parquet(args.output)
            delivered = spark.read.parquet(args.output)  # count what was written, not a second replay
        elif not args.summary:
            delivered = delivered.persist()  # printed and counted: replay once
        if not args.summary:
            for r in (delivered.orderBy("queue_id", "queue_offset")
                      .select("queue_id", "queue_offset", "msg_id", "tags", "keys").toLocalIterator()):
                print(f"queue {r['queue_id']} offset {r['queue_offset']}: msg_id {r['msg_id']} "
                      f"tags {_text(r['tags'])} keys {_text(r['keys'])}")
        counts = {r["queue_id"]: r["count"] for r in delivered.groupBy("queue_id").count().collect()}
        for line in summary_lines(store, sub, counts, pulls):
            print(line)
        if args.output:
            print(f"wrote {sum(counts.values())} messages to {args.output}")
        delivered.unpersist()  # the caller's session may live on (a notebook, the tests)
        return 0

    return guarded(parser.prog, run)


if __name__ == "__main__":
    sys.exit(main())
