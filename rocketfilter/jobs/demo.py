"""``rocketfilter demo``: ten sample messages filtered by a tag subscription and by an SQL92
selector, and what each delivers (:mod:`rocketfilter.jobs.demo_run`).

    rocketfilter demo
    rocketfilter demo --tags "TAG_B" --selector "age >= 8" --master "local[1]"

The selector is linted against the sample messages' own properties; each finding is a warning
line on stderr.
"""
from __future__ import annotations

import argparse
from typing import Optional, Sequence

from rocketfilter.jobs import common

NAME = "demo"
HELP = "filter ten sample messages by tag and by SQL92"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    # The defaults live in rocketfilter.jobs.demo_run, which imports pyspark: run() fills them in, so that
    # building the command line stays light.
    parser.add_argument("--tags", metavar="EXPR", help="tag subscription expression (default: 'TAG_A || TAG_C')")
    parser.add_argument("--selector", metavar="SQL92",
                        help="SQL92 selector (default: the age/name/isGender example)")
    common.add_spark_arguments(parser)
    parser.set_defaults(handler=run)


def register(subparsers) -> None:
    add_arguments(subparsers.add_parser(NAME, help=HELP, description=common.first_line(__doc__)))


def run(args: argparse.Namespace, spark=None) -> int:
    """Check both expressions (and lint the selector on the sample's properties), then run."""
    from rocketfilter.jobs.demo_run import DEFAULT_SELECTOR, DEFAULT_TAGS, run_demo, seed_properties
    from rocketfilter.selector import parse
    from rocketfilter.tags import build_subscription

    args.tags = DEFAULT_TAGS if args.tags is None else args.tags
    args.selector = DEFAULT_SELECTOR if args.selector is None else args.selector
    build_subscription("", args.tags)
    for finding in parse(args.selector).lint(known_properties=seed_properties()):
        common.warn(args, f"selector {finding} [{finding.code}]")
    common.check_settings(args)
    spark = common.start_spark(args, "rocketfilter-demo", spark)
    run_demo(spark, tag_expression=args.tags, selector=args.selector)
    return 0


def main(argv: Optional[Sequence[str]] = None, *, spark=None, prog: str = "rocketfilter demo") -> int:
    return common.run_standalone(prog, HELP, add_arguments, argv, spark)
