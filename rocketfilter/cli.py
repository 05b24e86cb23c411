"""The ``rocketfilter`` command. It never shows a traceback: errors become one line on stderr,
exit 2 for bad input (usage, ValueError such as a selector syntax error), 1 for anything else."""
from __future__ import annotations

import argparse
import sys
from typing import Callable, NoReturn, Optional, Sequence


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("rocketfilter")
    except PackageNotFoundError:
        return "unknown (not installed)"


class OneLineArgumentParser(argparse.ArgumentParser):
    """argparse with usage errors reported as a single ``prog: error: ...`` line."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see --help)\n")


def add_verbose_argument(parser: argparse.ArgumentParser) -> None:
    """``--verbose``: Spark's own logs and progress bars (quiet by default, see get_spark)."""
    parser.add_argument("--verbose", action="store_true",
                        help="show Spark's own log lines and stage progress bars")


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


def guarded(prog: str, action: Callable[[], int]) -> int:
    """Run ``action``, turning any exception into one stderr line and an exit code."""
    try:
        return action()
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        return 130
    except ValueError as exc:  # bad input: selector syntax, tag expression, arguments
        print(f"{prog}: error: {_first_line(exc)}", file=sys.stderr)
        return 2
    except Exception as exc:  # noqa: BLE001 - the contract is no traceback, whatever failed
        print(f"{prog}: error: {_first_line(exc)}", file=sys.stderr)
        return 1


def build_parser(prog: str = "rocketfilter") -> argparse.ArgumentParser:
    from rocketfilter.demo import add_demo_arguments, demo_command
    from rocketfilter.jobs.groups import add_groups_arguments, groups_command

    parser = OneLineArgumentParser(prog=prog, description="RocketMQ message filtering on Spark.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=OneLineArgumentParser)
    demo = commands.add_parser("demo", help="filter ten sample messages by tag and by SQL92")
    add_demo_arguments(demo)
    add_verbose_argument(demo)
    demo.set_defaults(handler=demo_command)
    groups = commands.add_parser("groups", help="replay or diagnose a consumer group on a store's topic")
    add_groups_arguments(groups)
    groups.set_defaults(handler=groups_command)

    from rocketfilter.jobs.maintenance import (add_backfill_arguments, add_promote_arguments,
                                               backfill_command, promote_command)
    promote = commands.add_parser("promote", help="parse properties once: typed CommitLog columns")
    add_promote_arguments(promote)
    promote.set_defaults(handler=promote_command)
    backfill = commands.add_parser("backfill", help="compute exact subscription bits for history")
    add_backfill_arguments(backfill)
    backfill.set_defaults(handler=backfill_command)
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    prog = "rocketfilter"
    try:
        parser = build_parser(prog)
    except Exception as exc:  # noqa: BLE001 - e.g. pyspark missing
        print(f"{prog}: error: {_first_line(exc)}", file=sys.stderr)
        return 1
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help(sys.stderr)
        return 2
    return guarded(prog, lambda: args.handler(args))


if __name__ == "__main__":
    sys.exit(main())
