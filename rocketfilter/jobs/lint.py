"""``rocketfilter lint``: what an SQL92 selector does that its author may not expect.

    rocketfilter lint "region LIKE 'eu%'"
    rocketfilter lint "amount > 100 AND nosuchprop = 'x'" --store /data/rf-store --topic OrderEvents

Prints each finding of ``Selector.lint`` (docs/selector.md, "Lint"): where it is (a caret under
the selector), what RocketMQ will do, and the fix. With ``--store`` and ``--topic``, the topic's
newest ``--sample`` messages (1000 by default, read from the store's newest files, never the whole
topic, without Spark) tell which properties occur and what values they hold, so names that never
occur and values the comparison throws on are found too.

Exit codes: 0 no findings; 1 findings; 2 bad input (usage, a selector RocketMQ does not compile,
an unknown topic); 3 the lint could not run (no store at the path, unreadable files).
"""
from __future__ import annotations

import argparse
import sys
from typing import Optional, Sequence

from rocketfilter.jobs import common

NAME = "lint"
HELP = "find what an SQL92 selector does that its author may not expect"
FINDINGS, COULD_NOT_RUN = 1, 3


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("selector", help="the SQL92 selector, quoted")
    parser.add_argument("--store", metavar="URI", help="a store whose topic's messages show the known properties")
    parser.add_argument("--topic", type=common.topic_type, help="the topic (with --store)")
    parser.add_argument("--sample", type=common.positive_int("sample"), default=common.DEFAULT_SAMPLE, metavar="N",
                        help=f"how many of the topic's newest messages to read (default {common.DEFAULT_SAMPLE})")
    parser.set_defaults(handler=run)


def register(subparsers) -> None:
    add_arguments(subparsers.add_parser(NAME, help=HELP, description=common.first_line(__doc__)))


def _known(args: argparse.Namespace):
    """``(known_properties, a line saying where they came from)``; (None, None) without --store."""
    from rocketfilter.store.sample import sample_properties

    if (args.store is None) != (args.topic is None):
        raise ValueError("--store and --topic go together: the properties of the topic's newest messages")
    if args.store is None:
        return None, None
    tables = common.peek_store(args)
    common.require_topic(tables, args.topic)
    sample = sample_properties(tables, args.topic, args.sample)
    if not sample.messages:
        return None, f"topic {args.topic} has no messages: property names are not checked"
    names = ", ".join(sorted(sample.counts)) or "none"
    return (sample.known_properties(),
            f"{sample.messages} newest messages of {args.topic} carry the properties: {names}")


def format_finding(selector: str, finding) -> str:
    """A finding as lines: a caret under its place (for a one-line selector), then
    ``col N [code]: message`` and ``  fix: ...``."""
    lines = []
    position = finding.position
    if position is not None and "\n" not in selector and "\r" not in selector:
        lines.append("  " + selector)
        lines.append("  " + " " * position + "^")
    where = str(finding).split(": ", 1)[0] if position is not None else "selector"
    lines.append(f"{where} [{finding.code}]: {finding.message}")
    if finding.fix:
        lines.append(f"  fix: {finding.fix}")
    return "\n".join(lines)


def run(args: argparse.Namespace, spark=None) -> int:
    from rocketfilter.selector import parse

    selector = parse(args.selector)  # SelectorSyntaxError (a ValueError): exit 2
    try:
        known, note = _known(args)
    except Exception as error:  # noqa: BLE001 - sorted out below
        if isinstance(error, ValueError):
            raise  # bad input (an unknown topic): exit 2
        # No store, unreadable files: exit 3, which CI can tell from 1 (findings).
        from rocketfilter.jobs.errors import error_line

        print(f"{args.prog}: error: {error_line(error)}", file=sys.stderr)
        return COULD_NOT_RUN
    if note:
        print(note)
    findings = selector.lint(known_properties=known)
    for finding in findings:
        print(format_finding(args.selector, finding))
    print(f"{len(findings)} finding{'' if len(findings) == 1 else 's'}" if findings else "no findings")
    return FINDINGS if findings else 0


def main(argv: Optional[Sequence[str]] = None, *, spark=None, prog: str = "rocketfilter lint") -> int:
    return common.run_standalone(prog, HELP, add_arguments, argv, spark)
