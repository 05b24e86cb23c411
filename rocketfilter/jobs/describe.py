"""``rocketfilter describe``: what a store holds, as ``mqadmin`` shows a broker's.

    rocketfilter describe --store /data/rf-store
    rocketfilter describe --store /data/rf-store --topic OrderEvents [--sample 1000] [--json]

Prints the store's settings (those that differ from the defaults), its tables, its topics with
their message counts and store times, each consumer group (stored, or with committed offsets)
with its consumers' subscriptions and its lag per queue, the promoted properties and the
subscriptions registered for exact bits. With ``--topic``, the most frequent property keys of the
topic's newest ``--sample`` messages, with how many of their values are int-like, double-like,
boolean-like, NaN, Infinity or other (what a numeric comparison will meet). ``--json`` prints
``MessageStore.describe()``'s plain data. Spark is not started.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
from typing import Optional, Sequence

from rocketfilter.jobs import common

NAME = "describe"
HELP = "show a store's settings, topics, consumer groups and their lag, and a topic's properties"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    common.add_store_argument(parser)
    parser.add_argument("--topic", type=common.topic_type,
                        help="this topic only, with its most frequent properties and their kinds of value")
    parser.add_argument("--sample", type=common.positive_int("sample"), default=common.DEFAULT_SAMPLE, metavar="N",
                        help=f"how many of the topic's newest messages to read (default {common.DEFAULT_SAMPLE})")
    parser.add_argument("--json", action="store_true", help="print the answer as JSON")
    common.add_settings_argument(parser)
    parser.set_defaults(handler=run)


def register(subparsers) -> None:
    add_arguments(subparsers.add_parser(NAME, help=HELP, description=common.first_line(__doc__)))


def _changed(settings: dict, default) -> list:
    base = dataclasses.asdict(default)
    return [f"{k}={v}" for k, v in settings.items() if base.get(k) != v]


def _values(values: list, shown: int = 3, width: int = 24) -> str:
    """A few sample values, each quoted as Java source would (so blanks and commas show)."""
    cut = [v if len(v) <= width else v[:width - 1] + "…" for v in values[:shown]]
    return ", ".join(repr(v) for v in cut) + (", ..." if len(values) > shown else "")


def format_description(info: dict) -> str:
    """``describe``'s answer as text."""
    from rocketfilter.config import BrokerConfig, MessageStoreConfig
    from rocketfilter.text_table import format_table

    from rocketfilter.jobs.topics import format_topics

    changed = (_changed(info["settings"]["store"], MessageStoreConfig())
               + _changed(info["settings"]["broker"], BrokerConfig()))
    log = info["commitlog"]
    out = [f"store {info['uri']}",
           f"settings: {', '.join(changed) if changed else 'the defaults'}",
           f"commitlog: offsets {log['min_offset']} to {log['next_offset']}, dispatched to {log['dispatched']}",
           "tables: " + "; ".join(f"{name} v{t['version']} {t['files']} files {t['rows']} rows"
                                  for name, t in info["tables"].items()),
           "", "topics:", format_topics(info["topics"]), "", "consumer groups:"]
    if not info["groups"]:
        out.append("  none")
    for g in info["groups"]:
        head = f"  {g['group']}" + (f" ({g['message_model']}, {g['consume_from_where']})" if g["stored"]
                                    else " (not stored: committed offsets only)")
        out.append(f"{head}: lag {g['lag']}")
        for c in g.get("consumers", []):
            subs = ", ".join(f"{s['topic']} {s['expression_type']} {s['expression']!r}" for s in c["subscriptions"])
            out.append(f"    consumer {c['client_id']}: {subs or 'subscribes nothing'}")
        if g["offsets"]:
            rows = [[r["topic"], r["queue_id"], r["committed"], r["min_offset"], r["max_offset"], r["lag"]]
                    for r in g["offsets"]]
            table = format_table(["topic", "queue", "committed", "min", "max", "lag"], rows)
            out.extend("    " + line for line in table.splitlines())
    promoted = info["promoted_properties"]
    out += ["", "promoted properties: " + (", ".join(f"{p} ({c})" for p, c in promoted.items()) or "none")]
    regs = [f"{topic}: {group} {r['expressionType']} {r['expression']!r}"
            for topic, groups in sorted(info["registered_subscriptions"].items())
            for group, r in sorted(groups.items())]
    out.append("registered subscriptions: " + ("; ".join(regs) or "none"))
    props = info.get("properties")
    if props is not None:
        out += ["", f"properties of {props['topic']} in its newest {props['sampled_messages']} messages:"]
        rows = [[p["name"], p["messages"], *p["kinds"].values(), _values(p["values"])] for p in props["properties"]]
        if rows:
            kinds = [k + "-like" if k in ("int", "double", "boolean") else k for k in props["properties"][0]["kinds"]]
            out.append(format_table(["property", "messages", *kinds, "values"], rows))
        else:
            out.append("  none")
    return "\n".join(out)


def run(args: argparse.Namespace, spark=None) -> int:
    from rocketfilter.store.describe import describe

    tables = common.peek_store(args)
    if args.topic is not None:
        common.require_topic(tables, args.topic)
    info = describe(tables, args.topic, sample=args.sample)
    print(json.dumps(info, indent=2, ensure_ascii=False) if args.json else format_description(info))
    return 0


def main(argv: Optional[Sequence[str]] = None, *, spark=None, prog: str = "rocketfilter describe") -> int:
    return common.run_standalone(prog, HELP, add_arguments, argv, spark)
