"""``rocketfilter offsets show|reset``: a consumer group's committed offsets, and setting them.

    rocketfilter offsets show --store /data/rf-store --group GID_orders [--topic OrderEvents]
    rocketfilter offsets reset --store /data/rf-store --group GID_orders --topic OrderEvents --to-earliest
    rocketfilter offsets reset --store /data/rf-store --group GID_orders --topic OrderEvents --to-offset 40 --queue 2
    rocketfilter offsets reset --store /data/rf-store --group GID_orders --topic OrderEvents --to-time 2024-05-01T10:00:00Z

``show`` prints, per queue, the committed offset (empty when the group has none), the queue's
min and max offset and the lag, as ``mqadmin consumerProgress`` computes its Diff: the max
offset minus the committed offset, counting from 0 when none is committed. Without ``--topic``
it shows every topic the group committed an offset on (and, for a stored group, every topic it
subscribes); for a group with none it says which topics the store has and which groups have
committed offsets.

``reset`` commits new offsets for the topic's read queues (or only ``--queue``): each queue's
min offset (``--to-earliest``), max offset (``--to-latest``), the first offset stored at or after
``--to-time`` (``reset_offset_by_time``, RocketMQ's resetOffsetByTime) or ``--to-offset N``, which, as a
broker's resetOffset refuses, must lie in ``[min, max + 1]`` of every queue it is given for.
Every offset is checked before any is committed, in one commit.

Neither starts Spark: the offsets and the queues' bounds are read from the store's tables.
"""
from __future__ import annotations

import argparse
from typing import Dict, List, Optional, Sequence, Tuple

from rocketfilter.jobs import common

NAME = "offsets"
HELP = "show or reset a consumer group's committed offsets"


def _common(parser: argparse.ArgumentParser, topic_required: bool) -> None:
    common.add_store_argument(parser)
    parser.add_argument("--group", required=True, type=common.group_type, help="the consumer group")
    parser.add_argument("--topic", required=topic_required, type=common.topic_type,
                        help="the topic" + ("" if topic_required else " (default: every topic the group committed on)"))
    common.add_settings_argument(parser)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    subcommands = parser.add_subparsers(dest="offsets_command", metavar="SUBCOMMAND", required=True,
                                        parser_class=type(parser))
    show = subcommands.add_parser("show", help="committed offset, min/max offset and lag per queue",
                                  description="Show a consumer group's committed offset, min and max offset and "
                                              "lag per queue of a topic, or of every topic it has offsets on.")
    _common(show, topic_required=False)
    show.set_defaults(handler=run_show)
    reset = subcommands.add_parser("reset", help="commit new offsets for a topic's queues",
                                   description="Commit new offsets for a consumer group on a topic's queues: "
                                               "the earliest, the latest, an offset, or the first at a time.")
    _common(reset, topic_required=True)
    target = reset.add_mutually_exclusive_group(required=True)
    target.add_argument("--to-offset", type=common.offset_type, metavar="N", help="this offset")
    target.add_argument("--to-earliest", action="store_true", help="each queue's min offset")
    target.add_argument("--to-latest", action="store_true", help="each queue's max offset")
    target.add_argument("--to-time", type=_time_type, metavar="TIME",
                        help="the first offset stored at or after TIME (epoch ms or ISO-8601, UTC when "
                             "no zone), as mqadmin resetOffsetByTime")
    reset.add_argument("--queue", type=common.queue_id_type, metavar="Q", help="only this queue")
    reset.set_defaults(handler=run_reset)


def _time_type(text: str) -> int:
    """Epoch ms of ``--to-time``; an argparse error names what is accepted."""
    from rocketfilter.offsets_spec import parse_offsets

    try:
        spec = parse_offsets(text, "--to-time")
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None
    if spec.kind != "timestamp":
        raise argparse.ArgumentTypeError(f"expected a time (epoch ms or ISO-8601), got {text!r}")
    return spec.timestamp_ms


def register(subparsers) -> None:
    add_arguments(subparsers.add_parser(NAME, help=HELP, description=common.first_line(__doc__)))


def _bounds(tables, topic: str, queue_id: int) -> Tuple[int, int]:
    found = tables.consumequeue_state().offsets(topic, queue_id)
    return found if found is not None else (0, 0)


def _warn_if_lagging(args: argparse.Namespace, tables) -> None:
    """The ConsumeQueue behind the CommitLog (a put whose dispatch did not run): the max offsets
    are those of the dispatched messages; opening the store with Spark dispatches the rest."""
    if tables.consumequeue_state().dispatched < tables.commitlog_state().next_commitlog_offset:
        common.warn(args, "the ConsumeQueue lags the CommitLog (a dispatch did not run): max offsets and lag "
                          "count the dispatched messages only; any command that runs Spark on the store "
                          "(replay, pull) dispatches the rest")


def progress_rows(tables, group: str, topic: Optional[str]) -> List[list]:
    """``[topic, queue, committed or None, min, max, lag]`` per queue."""
    from rocketfilter.store.describe import group_progress

    return [[r["topic"], r["queue_id"], r["committed"], r["min_offset"], r["max_offset"], r["lag"]]
            for r in group_progress(tables, group, topic)]


def _nothing_committed(tables, group: str) -> str:
    """What to say of a group with no offsets: which topics there are, and which groups do have
    offsets (a misspelt group name is the usual reason)."""
    from rocketfilter.store.offsets import consumer_offsets
    from rocketfilter.store.topics import topics

    names = ", ".join(sorted(topics(tables))) or "none"
    others = sorted({g for g, _, _ in consumer_offsets(tables)})
    shown = ", ".join(others[:10]) + (f" and {len(others) - 10} more" if len(others) > 10 else "")
    return (f"group {group} has no committed offsets in store {tables.uri}; its topics: {names}; "
            f"groups with committed offsets: {shown or 'none'}")


def run_show(args: argparse.Namespace, spark=None) -> int:
    from rocketfilter.text_table import format_table

    tables = common.peek_store(args)
    if args.topic is not None:
        common.require_topic(tables, args.topic)
    _warn_if_lagging(args, tables)
    rows = progress_rows(tables, args.group, args.topic)
    if not rows:
        print(_nothing_committed(tables, args.group))
        return 0
    print(format_table(["topic", "queue", "committed", "min", "max", "lag"], rows))
    print(f"{args.group}: lag {sum(r[5] for r in rows)} over {len(rows)} queues")
    return 0


def reset_targets(args: argparse.Namespace, tables) -> Dict[int, int]:
    """``{queue_id: new offset}``; ValueError (nothing committed) for an offset out of range."""
    from rocketfilter.store.offsets_by_time import get_offset_in_queue_by_time
    from rocketfilter.store.topics import topic_config

    count = topic_config(tables, args.topic).read_queue_nums
    if args.queue is not None and args.queue >= count:
        raise ValueError(f"topic {args.topic!r} has {count} read queues (0..{count - 1}); "
                         f"queue {args.queue} is out of range")
    queues = [args.queue] if args.queue is not None else list(range(count))
    targets = {}
    for q in queues:
        lo, hi = _bounds(tables, args.topic, q)
        if args.to_earliest:
            targets[q] = lo
        elif args.to_latest:
            targets[q] = hi
        elif getattr(args, "to_time", None) is not None:
            targets[q] = get_offset_in_queue_by_time(tables, args.topic, q, args.to_time, "LOWER")
        else:
            # AdminBrokerProcessor.resetOffsetInner: offset < min or offset > max + 1 is refused,
            # with the broker's words (its max is maxOffsetInQueue, as here).
            if args.to_offset < lo or args.to_offset > hi + 1:
                raise ValueError(f"queue {q}: Target offset {args.to_offset} not in consume queue range [{lo}-{hi}]")
            targets[q] = args.to_offset
    return targets


def run_reset(args: argparse.Namespace, spark=None) -> int:
    from rocketfilter.store.offsets import commit_consumer_offsets, consumer_offsets, reset_offset_by_time
    from rocketfilter.text_table import format_table

    tables = common.peek_store(args)
    common.require_topic(tables, args.topic)
    _warn_if_lagging(args, tables)
    before = consumer_offsets(tables, args.group, args.topic)
    if getattr(args, "to_time", None) is not None and args.queue is None:
        targets = reset_offset_by_time(tables, args.group, args.topic, args.to_time)  # commits
    else:
        targets = reset_targets(args, tables)
        commit_consumer_offsets(tables, [(args.group, args.topic, q, offset) for q, offset in targets.items()])
    rows = [[args.topic, q, before.get((args.group, args.topic, q)), offset] for q, offset in targets.items()]
    print(format_table(["topic", "queue", "was", "now"], rows))
    print(f"{args.group}: committed {len(rows)} offsets of {args.topic}")
    return 0


def main(argv: Optional[Sequence[str]] = None, *, spark=None, prog: str = "rocketfilter offsets") -> int:
    return common.run_standalone(prog, HELP, add_arguments, argv, spark)
