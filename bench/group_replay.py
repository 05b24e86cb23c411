"""``replay_group`` with 8 consumers against 8 separate ``pull_sequence`` runs, side by side in one run.

The group: 8 consumers of ``BenchTopic`` (8 queues), AVG, so each takes one queue; all subscribe
``--tags`` (default ``Tag1 || Tag3``). Both sides deliver the same rows (checked) and are
materialised the same way (Spark's ``noop`` sink, every column):

* ``replay_group``: one Spark action for the whole group;
* separately: for each consumer, the pull loop (``rocketfilter.pull.batch.pull_sequence``) over its
  own queue's ConsumeQueue entries with the broker's tag-code flag, then the CommitLog joined for
  ``msg_id``/``tags`` and the client's exact re-check: what a user writes today per consumer.
  (``rocketfilter.pull.sequence.pull_sequence`` always pulls every queue of the topic, so running it
  per consumer would do 8 times the work; the per-queue run is the fair peer.)

Uses the store of ``bench/ingest.py --keep`` with ``--store``, or builds one of ``--messages``
messages (the same data) in a temporary directory:

    python bench/group_replay.py --store /tmp/rf-bench-store
    python bench/group_replay.py --messages 200000

Prints both times, the Spark jobs each side ran, and the ratio (separate / replay_group).
"""
from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))
TOPIC, QUEUES, CONSUMERS = "BenchTopic", 8, 8


def _timed(spark, name, action):
    """(seconds, jobs) of ``action`` run under a job group of its own."""
    spark.sparkContext.setJobGroup(name, name)
    try:
        t0 = time.perf_counter()
        result = action()
        elapsed = time.perf_counter() - t0
    finally:
        spark.sparkContext.setLocalProperty("spark.jobGroup.id", None)
    return elapsed, len(spark.sparkContext.statusTracker().getJobIdsForGroup(name)), result


def separate_run(store, consumer_queues, sub, max_msg_nums):
    """One consumer's deliveries the way it is done without replay_group."""
    from pyspark.sql import functions as F

    from rocketfilter.pull.batch import pull_sequence
    from rocketfilter.pull.filter import ExpressionMessageFilter
    from rocketfilter.pull.get_message import pull_limits
    from rocketfilter.tag_columns import tag_exact_predicate

    spark, f = store.spark, ExpressionMessageFilter(sub)
    state = store.consumequeue_state().queues[TOPIC]
    cl = store.commitlog_state()
    entries = (store.consumequeue.read(spark, where=[("topic", "=", TOPIC)])
               .where(F.col("queue_id").isin(consumer_queues))
               .select("topic", "queue_id", "queue_offset", "commitlog_offset", "size",
                       f.consume_queue_column().alias("cq_match"),
                       (F.col("commitlog_offset") >= cl.min_commitlog_offset).alias("cl_present"),
                       F.lit(True).alias("cl_match")))
    key = {(TOPIC, q): lo for q, (lo, hi) in state.items()}
    delivered = pull_sequence(entries, max_msg_nums=max_msg_nums, max_offset_py=cl.next_commitlog_offset,
                              limits=pull_limits(store.config), start_offsets=key, min_offsets=key,
                              max_offsets={(TOPIC, q): hi for q, (lo, hi) in state.items()})
    messages = store.commitlog.read(spark, where=[("topic", "=", TOPIC)]).select("commitlog_offset", "msg_id", "tags")
    return delivered.join(messages, "commitlog_offset").where(tag_exact_predicate(sub, F.col("tags")))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", help="a store made by bench/ingest.py --keep")
    parser.add_argument("--messages", type=int, default=200_000, help="without --store: build one this big")
    parser.add_argument("--tags", default="Tag1 || Tag3")
    parser.add_argument("--max-msg-nums", type=int, default=32)
    args = parser.parse_args()

    from pyspark.sql import SparkSession

    from rocketfilter.config import MessageStoreConfig
    from rocketfilter.consumer import ConsumerGroup, MessageQueue
    from rocketfilter.groups.replay import replay_group
    from rocketfilter.session import get_spark
    from rocketfilter.store import MessageStore
    from rocketfilter.tags import build_subscription

    spark = get_spark(SparkSession.builder.appName("rocketfilter-bench-group-replay").master("local[2]")
                      .config("spark.driver.memory", "4g").config("spark.ui.enabled", "false")
                      .config("spark.ui.showConsoleProgress", "false"))
    spark.sparkContext.setLogLevel("ERROR")
    built = None
    if args.store:
        store = MessageStore.open(args.store, spark, create=False)
    else:
        from ingest import bench_messages

        built = tempfile.mkdtemp(prefix="rf-bench-groups-")
        store = MessageStore.open(built, spark, MessageStoreConfig(dispatch_on_put=False))
        store.create_topic(TOPIC, read_queue_nums=QUEUES, write_queue_nums=QUEUES)
        t0 = time.perf_counter()
        store.put_messages(bench_messages(spark, args.messages))
        store.dispatch()
        print(f"built a store of {args.messages:,} messages in {time.perf_counter() - t0:.1f} s: {built}")
    total = sum(hi - lo for lo, hi in store.consumequeue_state().queues[TOPIC].values())

    group = ConsumerGroup("GID_bench")
    for i in range(CONSUMERS):
        group.add_consumer(f"c{i}", {TOPIC: args.tags})
    mqs = [MessageQueue(TOPIC, store.broker_config.broker_name, q) for q in range(QUEUES)]
    owned = {cid: [q.queue_id for q in qs] for cid, qs in group.allocate(TOPIC, mqs).items()}
    sub = build_subscription(TOPIC, args.tags)

    def run_group():
        replay_group(store, group, TOPIC, max_msg_nums=args.max_msg_nums).write.format("noop").mode("overwrite").save()

    def run_separately():
        for cid, queues in owned.items():
            separate_run(store, queues, sub, args.max_msg_nums).write.format("noop").mode("overwrite").save()

    # The same deliveries, then a warm-up of both paths (Python workers, JIT), then the timed runs.
    got = replay_group(store, group, TOPIC, max_msg_nums=args.max_msg_nums).select("queue_id", "queue_offset")
    expected = None
    for cid, queues in owned.items():
        part = separate_run(store, queues, sub, args.max_msg_nums).select("queue_id", "queue_offset")
        expected = part if expected is None else expected.unionByName(part)
    assert got.exceptAll(expected).count() == 0 and expected.exceptAll(got).count() == 0, "the two sides differ"
    delivered = got.count()

    t_group, jobs_group, _ = _timed(spark, "bench-group", run_group)
    t_sep, jobs_sep, _ = _timed(spark, "bench-separate", run_separately)
    print(f"topic {TOPIC}: {total:,} entries in {QUEUES} queues, {CONSUMERS} consumers (AVG), "
          f"subscription {args.tags!r}, {delivered:,} consumed, {args.max_msg_nums} per pull")
    print(f"replay_group:             {t_group:8.1f} s  {jobs_group:3d} Spark job(s) for 1 action")
    print(f"8 separate pull_sequence: {t_sep:8.1f} s  {jobs_sep:3d} Spark job(s) for {CONSUMERS} actions")
    print(f"ratio {t_sep / t_group:.2f}x (separate / replay_group)")
    if built:
        shutil.rmtree(built, ignore_errors=True)


if __name__ == "__main__":
    main()
