"""``rocketfilter pull``: pull a topic's queues as one consumer of a group would, and show what
each pull delivers.

    rocketfilter pull --store /data/rf-store --topic OrderEvents --group GID_orders --sql "amount > 100.0"
    rocketfilter pull --store /data/rf-store --topic OrderEvents --group GID_orders --tags TagA \\
        --queue 2 --offset 40 --pulls 3 --commit

A ``PullConsumer`` of ``--group`` subscribes (``--tags``, ``--sql``, or ``*``) and pulls each queue
(``--queue``, repeatable; default every readable queue) ``--pulls`` times, ``--max-msg-nums``
messages at most per pull, each pull starting where the previous one's next_begin_offset points.
The first pull starts at ``--offset``, else at the group's committed offset, else where a new
consumer starts (``--consume-from-where``, RocketMQ's ``computePullFromWhere``). A queue stops
early once a pull answers NO_NEW_MSG. ``--commit`` stores each queue's last next_begin_offset as
the group's offset. The consumer is a real one: its heartbeat registers the subscription for the
group (SQL92 filter data included), and it leaves the group when the command ends. Each lint
finding of the selector is a warning line on stderr.

The pulls are read from the Delta files with pyarrow, without starting Spark, unless
``--master``/``--remote`` asks for it or the store needs its ConsumeQueue repaired (``--engine``,
see :mod:`rocketfilter.jobs.engine`); ``--engine spark`` reads them with Spark. The answers are
the same.

Prints the delivered messages (queue, offset, msg_id, tags, keys, born and store time), one line
per pull (status, messages, next_begin_offset), then a total.
"""
from __future__ import annotations

import argparse
import warnings
from typing import Optional, Sequence

from rocketfilter.jobs import common, engine

NAME = "pull"
HELP = "pull a topic's queues as a consumer of a group and show what each pull delivers"
_FROM_WHERE = ("CONSUME_FROM_LAST_OFFSET", "CONSUME_FROM_FIRST_OFFSET", "CONSUME_FROM_TIMESTAMP")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    common.add_store_argument(parser)
    parser.add_argument("--topic", required=True, type=common.topic_type, help="the topic to pull")
    parser.add_argument("--group", required=True, type=common.group_type, help="the consumer group")
    common.add_selector_arguments(parser)
    parser.add_argument("--queue", action="append", type=common.queue_id_type, metavar="Q",
                        help="a queue id to pull, repeatable (default: every readable queue)")
    parser.add_argument("--offset", type=common.offset_type, metavar="N",
                        help="where the first pull of each queue starts (default: the committed offset)")
    parser.add_argument("--consume-from-where", choices=_FROM_WHERE, default=_FROM_WHERE[0],
                        help="where a queue without a committed offset starts (default CONSUME_FROM_LAST_OFFSET)")
    parser.add_argument("--consume-timestamp", metavar="yyyyMMddHHmmss",
                        help="for CONSUME_FROM_TIMESTAMP (default: half an hour ago), in UTC")
    parser.add_argument("--max-msg-nums", type=common.max_msg_nums_type, default=32, metavar="N",
                        help="messages per pull (default 32)")
    parser.add_argument("--pulls", type=common.positive_int("pulls"), default=1, metavar="N",
                        help="pulls per queue (default 1)")
    parser.add_argument("--commit", action="store_true",
                        help="store each queue's last next_begin_offset as the group's consumer offset")
    parser.add_argument("--client-id", default="rocketfilter-cli", help="the consumer's client id")
    engine.add_engine_argument(parser)
    common.add_spark_arguments(parser)
    parser.set_defaults(handler=run)


def register(subparsers) -> None:
    add_arguments(subparsers.add_parser(NAME, help=HELP, description=common.first_line(__doc__)))


def _queues(args: argparse.Namespace, tables) -> list:
    """The queue ids to pull; ValueError for one the topic does not have."""
    from rocketfilter.store.topics import topic_config

    count = topic_config(tables, args.topic).read_queue_nums
    queues = sorted(set(args.queue)) if args.queue else list(range(count))
    bad = [q for q in queues if q >= count]
    if bad:
        raise ValueError(f"topic {args.topic!r} has {count} read queues (0..{count - 1}); queue {bad[0]} is out of range")
    return queues


def _starts(args: argparse.Namespace, store, queues: list) -> dict:
    """Each queue's first offset: --offset, else the committed one, else computePullFromWhere."""
    from rocketfilter.consumer.consume_from import compute_pull_from_where_for_topic

    if args.offset is not None:
        return {q: args.offset for q in queues}
    starts = compute_pull_from_where_for_topic(store, args.group, args.topic, args.consume_from_where,
                                               args.consume_timestamp, queue_ids=queues, time_zone="UTC")
    return {q: starts[q].offset for q in queues}


def pull_queues(consumer, topic: str, starts: dict, pulls: int, max_msg_nums: int) -> list:
    """``(queue_id, offset, PullResult)`` for every pull made, in order."""
    from rocketfilter.consumer.message_queue import MessageQueue
    from rocketfilter.pull.client import PullStatus

    done = []
    name = consumer.broker.broker_config.broker_name
    for q, offset in starts.items():
        queue = MessageQueue(topic, name, q)
        for _ in range(pulls):
            result = consumer.pull(queue, offset, max_msg_nums)
            done.append((q, offset, result))
            offset = result.next_begin_offset
            if result.pull_status is PullStatus.NO_NEW_MSG:
                break
    return done


def print_pulls(done: list, zone: str) -> int:
    """The delivered messages as a table, then one line per pull; returns the messages delivered."""
    from rocketfilter.text_table import format_millis, format_table

    rows = [[m.get("queue_id", q), m.get("queue_offset"), m.get("msg_id"), m.get("tags"), m.get("keys"),
             format_millis(m.get("born_timestamp"), zone), format_millis(m.get("store_timestamp"), zone)]
            for q, _, result in done for m in result.msg_found_list]
    if rows:
        print(format_table(["queue", "offset", "msg_id", "tags", "keys", "born", "stored"], rows))
    for q, offset, r in done:
        print(f"queue {q} offset {offset}: {r.pull_status}, {len(r.msg_found_list)} messages, "
              f"next_begin_offset {r.next_begin_offset} (min {r.min_offset}, max {r.max_offset})")
    return len(rows)


def run(args: argparse.Namespace, spark=None) -> int:
    from rocketfilter.consumer.consume_from import parse_consume_timestamp

    tables = common.peek_store(args)
    common.require_topic(tables, args.topic)
    queues = _queues(args, tables)
    if args.consume_timestamp is not None:
        parse_consume_timestamp(args.consume_timestamp, "UTC")  # a bad timestamp: before Spark
    sub = common.subscription(args, args.topic, common.known_properties(tables, args.topic))
    store = None
    # Every pull reads with pyarrow unless --engine spark, so auto starts Spark for none of them.
    if engine.use_arrow(args, spark=spark):
        store = engine.open_store_without_spark(args, force=args.engine == "arrow")
    if store is None:
        spark = common.start_spark(args, "rocketfilter-pull", spark)
        store = common.open_store(args, spark)
        if args.engine == "spark":   # the pulls too (by default a pull reads with pyarrow)
            store.pull_engine = "spark"

    from rocketfilter.pull.broker import Broker
    from rocketfilter.pull.client import PullConsumer
    from rocketfilter.selector import SelectorWarning

    consumer = PullConsumer(Broker(store), args.group, client_id=args.client_id)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SelectorWarning)  # printed above, one line each
            consumer.subscribe(args.topic, sub.sub_string, sub.expression_type)
        done = pull_queues(consumer, args.topic, _starts(args, store, queues), args.pulls, args.max_msg_nums)
    finally:
        consumer.shutdown()  # the process ends: the broker forgets the client, as on a closed channel
    zone = engine.session_time_zone(args, store.spark)
    delivered = print_pulls(done, zone)
    last = {}
    for q, _, result in done:
        last[q] = result.next_begin_offset
    if args.commit:
        store.commit_consumer_offsets([(args.group, args.topic, q, offset) for q, offset in last.items()])
    print(f"{args.topic}: delivered {delivered} messages in {len(done)} pulls from {len(last)} queues "
          f"({sub.expression_type} {sub.sub_string!r}, group {args.group})"
          + ("; offsets committed" if args.commit else ""))
    return 0


def main(argv: Optional[Sequence[str]] = None, *, spark=None, prog: str = "rocketfilter pull") -> int:
    return common.run_standalone(prog, HELP, add_arguments, argv, spark)
