"""What every command shares: Spark settings as spark-submit takes them, the store, the selector
and its lint warnings, progress, and running a command from the CLI or from a spark-submit script.

The order of work in every command is the contract: parse and check the arguments, the
settings, the selector and the store's existence (none of which needs Spark), and only then
:func:`start_spark`. A typo costs one line and no JVM start.
"""
from __future__ import annotations

import argparse
import functools
import re
import sys
from typing import Callable, Dict, Optional, Sequence, Tuple

from rocketfilter.checks import check_max_msg_nums, check_offset, check_queue_id
from rocketfilter.hooks import session_hooks_suspended
from rocketfilter.naming import validate_group, validate_topic

DEFAULT_SAMPLE = 1000   # newest messages the selector lint samples for property names and values
# Extra keyword arguments of every progress display the commands start (tests set a delay of 0).
PROGRESS_OPTIONS: Dict[str, object] = {}


class OneLineArgumentParser(argparse.ArgumentParser):
    """argparse with usage errors reported as a single ``prog: error: ...`` line. Each parser
    leaves its ``prog`` as ``command_prog`` in the namespace, the deepest one last, so a
    command's own errors name it as its usage errors do (``rocketfilter offsets reset``)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.set_defaults(command_prog=self.prog)

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message} (see --help)\n")


# --- argument types: the API's own checks, so both refuse with the same words -------------------

def _checked(check: Callable, what: str) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{what} must be an integer, got {text!r}") from None
        try:
            return check(value, what)
        except ValueError as error:
            raise argparse.ArgumentTypeError(str(error)) from None
    parse.__name__ = what  # argparse names the type in its messages
    return parse


max_msg_nums_type = _checked(check_max_msg_nums, "max_msg_nums")
queue_id_type = _checked(check_queue_id, "queue_id")
offset_type = _checked(check_offset, "offset")


def positive_int(what: str) -> Callable[[str], int]:
    def check(value: int, name: str) -> int:
        if value < 1:
            raise ValueError(f"{name} must be at least 1, got {value}")
        return value
    return _checked(check, what)


def _named(validate: Callable[[str], str]) -> Callable[[str], str]:
    def parse(text: str) -> str:
        try:
            return validate(text)
        except ValueError as error:
            raise argparse.ArgumentTypeError(str(error)) from None
    parse.__name__ = validate.__name__.replace("validate_", "")
    return parse


group_type = _named(validate_group)
topic_type = _named(validate_topic)


def conf_pair(text: str) -> Tuple[str, str]:
    """``key=value`` as spark-submit's ``--conf`` takes it."""
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"expected key=value, got {text!r}")
    return key.strip(), value


# --- shared options ---------------------------------------------------------------------------

def add_spark_arguments(parser: argparse.ArgumentParser) -> None:
    """``--conf``, ``--master`` / ``--remote`` and ``--verbose``, as spark-submit takes them."""
    spark = parser.add_argument_group("Spark")
    spark.add_argument("--conf", action="append", type=conf_pair, default=[], metavar="KEY=VALUE",
                       help="a Spark setting, repeatable; spark.rocketfilter.<key> sets broker and store "
                            "settings (docs/configuration.md)")
    where = spark.add_mutually_exclusive_group()
    where.add_argument("--master", help="Spark master URL (default: spark-submit's, else local[*])")
    where.add_argument("--remote", metavar="sc://HOST:PORT",
                       help="a Spark Connect server (default: $SPARK_REMOTE when set)")
    spark.add_argument("--verbose", action="store_true",
                       help="show Spark's own log lines and stage progress bars (and no progress lines)")


def add_store_argument(parser: argparse.ArgumentParser, help: str = "the rocketfilter store (path or URI)") -> None:
    parser.add_argument("--store", required=True, metavar="URI", help=help)


def add_settings_argument(parser: argparse.ArgumentParser) -> None:
    """``--conf`` for a command that starts no Spark: only broker and store settings count."""
    parser.add_argument("--conf", action="append", type=conf_pair, default=[], metavar="KEY=VALUE",
                        help="spark.rocketfilter.<key>=<value>: a broker or store setting (docs/configuration.md)")


def add_selector_arguments(parser: argparse.ArgumentParser) -> None:
    """``--tags`` or ``--sql``, and ``--strict``."""
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--tags", metavar="EXPR", help='a TAG subscription, e.g. "TagA || TagB" (default: "*")')
    which.add_argument("--sql", metavar="SELECTOR", help='an SQL92 selector, e.g. "amount > 100.0 AND region = \'eu\'"')
    parser.add_argument("--strict", action="store_true",
                        help="refuse an SQL92 selector with text RocketMQ would ignore after a complete "
                             "expression (other lint findings stay warnings)")


def spark_conf(args: argparse.Namespace) -> Dict[str, str]:
    """The ``--conf`` pairs (a later key wins, as in spark-submit)."""
    return dict(getattr(args, "conf", None) or ())


def check_settings(args: argparse.Namespace):
    """``(broker_config, store_config)`` from the ``spark.rocketfilter.*`` ``--conf`` pairs;
    ConfigError (a ValueError) names a bad key or value before Spark starts."""
    from rocketfilter.config import load_broker_conf

    return load_broker_conf(spark_conf=spark_conf(args))


def warn(args: argparse.Namespace, text: str) -> None:
    print(f"{args.prog}: warning: {text}", file=sys.stderr)


# --- the store, before and after Spark ---------------------------------------------------------

def peek_store(args: argparse.Namespace, uri: Optional[str] = None):
    """The store's tables without Spark (driver-side reads only), for the checks that come before
    Spark starts. StoreNotFoundError, one line, when there is no store at the path."""
    from rocketfilter.store.errors import StoreNotFoundError
    from rocketfilter.store.tables import StoreTables, store_exists

    uri = uri or args.store
    broker_config, store_config = check_settings(args)
    options = storage_options(args)
    if not store_exists(uri, options):
        raise StoreNotFoundError(f"no rocketfilter store at {uri} (no commitlog Delta table there); check the "
                                 "path (rocketfilter import makes a store of a broker's store directory)")
    return StoreTables(uri, None, store_config, broker_config, storage_options=options, create=False)


def require_topic(tables, topic: str) -> None:
    """ValueError naming the store's topics when ``topic`` is not one of them."""
    from rocketfilter.store.topics import topics

    known = topics(tables)
    if topic not in known:
        names = ", ".join(sorted(known)) or "none"
        raise ValueError(f"topic {topic!r} does not exist in store {tables.uri} (topics: {names})")


def require_group(tables, group: str) -> None:
    """ValueError naming the store's groups when ``group`` is not stored in it (no Spark)."""
    from rocketfilter.store.groups import list_groups

    known = list_groups(tables)
    if group not in known:
        raise ValueError(f"no consumer group {group!r} in store {tables.uri} (groups: {', '.join(known) or 'none'}); "
                         "save it with save_group, or give its --group-file")


def open_store(args: argparse.Namespace, spark, *, create: bool = False):
    """The store at ``--store`` on ``spark``, with the settings of the session and ``--conf``."""
    from rocketfilter.conf_sources import SPARK_PREFIX, spark_conf_items
    from rocketfilter.config import load_broker_conf
    from rocketfilter.store import MessageStore

    merged = {SPARK_PREFIX + k: v for k, v in spark_conf_items(spark).items()}
    merged.update(spark_conf(args))
    broker_config, store_config = load_broker_conf(spark_conf=merged)
    return MessageStore.open(args.store, spark, store_config, broker_config=broker_config, create=create,
                             storage_options=storage_options(args, spark))


def storage_options(args: argparse.Namespace, spark=None) -> Optional[dict]:
    """The store's explicit storage options: the session's ``spark.rocketfilter.storage.<key>``
    settings, then ``--conf`` ones (they override the AWS environment variables)."""
    from rocketfilter.conf_sources import storage_conf_items

    options = storage_conf_items(spark)
    options.update(storage_conf_items(spark_conf(args)))
    return options or None


# --- the selector ------------------------------------------------------------------------------

def known_properties(tables, topic: str, limit: int = DEFAULT_SAMPLE):
    """Property names and sample values of the topic's newest ``limit`` messages, or None (nothing
    known) when the topic has none."""
    from rocketfilter.store.sample import sample_properties

    sample = sample_properties(tables, topic, limit)
    return sample.known_properties() if sample.messages else None


def subscription(args: argparse.Namespace, topic: str, known=None):
    """The ``SubscriptionData`` of ``--tags`` / ``--sql``; each lint finding of an SQL92 selector
    is a warning line on stderr, and ``--strict`` makes ignored trailing text an error."""
    from rocketfilter.selector import parse
    from rocketfilter.tags import build_subscription

    sql = getattr(args, "sql", None)
    if sql is not None:
        selector = parse(sql, strict=getattr(args, "strict", False))  # SelectorSyntaxError: exit 2
        for finding in selector.lint(known_properties=known):
            warn(args, f"selector {finding} [{finding.code}]")
        return build_subscription(topic, sql, "SQL92")
    tags = getattr(args, "tags", None)
    return build_subscription(topic, "*" if tags is None else tags)


# --- Spark -------------------------------------------------------------------------------------

def start_spark(args: argparse.Namespace, app_name: str, spark=None):
    """The session to work on: ``spark`` when given, else the active one (a notebook's, the
    tests'), else a new one from ``--master`` / ``--remote`` / ``$SPARK_REMOTE`` and ``--conf``,
    quiet unless ``--verbose`` (:func:`rocketfilter.session.get_spark`)."""
    from pyspark.sql import SparkSession

    from rocketfilter.session import get_spark

    if spark is not None:
        return spark
    remote = getattr(args, "remote", None)
    active = None if remote else SparkSession.getActiveSession()
    if active is not None:
        return active
    if remote and remote.startswith("sc://"):
        # The Connect client's own builder: it works beside a classic session too.
        from pyspark.sql.connect.session import SparkSession as RemoteSparkSession

        builder = RemoteSparkSession.builder.remote(remote)
    elif remote:  # "local[2]": pyspark starts a Connect server in this process
        builder = SparkSession.builder.remote(remote)
    else:
        builder = SparkSession.builder
        if getattr(args, "master", None):
            builder = builder.master(args.master)
    builder = builder.appName(app_name)
    for key, value in spark_conf(args).items():
        builder = builder.config(key, value)
    return get_spark(builder, verbose=getattr(args, "verbose", False), store=getattr(args, "store", None))


def command_progress(args: argparse.Namespace, label: str):
    """A command's progress display, from its first phase (``starting Spark``) to its end, as a
    context manager (it closes with the summary line); a null context with ``--verbose``. Hand
    it to :func:`progress_option` so the Spark work continues it."""
    from contextlib import nullcontext

    from rocketfilter.progress import Progress

    if getattr(args, "verbose", False):
        return nullcontext()
    return Progress(label, phase="starting Spark", **PROGRESS_OPTIONS)


def progress_option(args: argparse.Namespace, spark, display=None):
    """What a command passes as ``progress=``: a display on stderr (continuing ``display``, the
    :func:`command_progress`, when given), or False with ``--verbose`` (Spark's own stage bars
    are back then)."""
    from rocketfilter.spark_progress import spark_progress

    if getattr(args, "verbose", False):
        return False
    if display is not None:
        return functools.partial(spark_progress, spark, display=display)
    return functools.partial(spark_progress, spark, **PROGRESS_OPTIONS)


def progress_block(args: argparse.Namespace, spark, label: str, display=None, **kwargs):
    """A progress display around a block of a command's Spark work (nothing with ``--verbose``)."""
    from rocketfilter.spark_progress import progress_block as block

    return block(spark, progress_option(args, spark, display), label, **kwargs)


# --- running a command -------------------------------------------------------------------------

def guarded(prog: str, action: Callable[[], int], *, verbose: bool = False) -> int:
    """Run ``action``, turning any exception into one stderr line and an exit code: 2 for bad
    input (a ValueError: selector syntax, names, settings), 1 for anything else, 130 on Ctrl-C.
    The line names the innermost cause (:func:`rocketfilter.jobs.errors.error_line`: a gRPC
    status and detail, a Java exception's message); ``verbose`` adds the whole chain below it."""
    from rocketfilter.jobs.errors import error_chain, error_line

    try:
        return action()
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # noqa: BLE001 - the contract is no traceback, whatever failed
        print(f"{prog}: error: {error_line(exc)}", file=sys.stderr)
        if verbose:
            for line in error_chain(exc):
                print("  " + line.replace("\n", "\n  "), file=sys.stderr)
        return 2 if isinstance(exc, ValueError) else 1


def exit_code(done: SystemExit) -> int:
    """The exit code a SystemExit from argparse carries (``--help``: 0, a usage error: 2)."""
    return done.code if isinstance(done.code, int) else (0 if done.code is None else 2)


def run_standalone(prog: str, description: str, add_arguments: Callable[[argparse.ArgumentParser], None],
                   argv: Optional[Sequence[str]], spark=None) -> int:
    """A command as its own program (the ``spark_jobs/*.py`` scripts): parse ``argv`` (usage
    errors return 2 instead of exiting, so tests can call it), then run it guarded."""
    parser = OneLineArgumentParser(prog=prog, description=description)
    add_arguments(parser)
    try:
        args = parser.parse_args(argv)
    except SystemExit as done:
        return exit_code(done)
    args.prog = getattr(args, "command_prog", None) or prog
    return guarded(args.prog, lambda: run_handler(args, spark), verbose=getattr(args, "verbose", False))


def run_handler(args: argparse.Namespace, spark=None) -> int:
    """``args.handler(args, spark)`` with the session hooks suspended: no command reads through
    the ``rocketmq`` source, and registering it with a session the command starts makes Spark
    run its Python data-source lookup, 3 to 5 s of every run (bench/cli_latency.py)."""
    with session_hooks_suspended():
        return args.handler(args, spark)


def first_line(doc: Optional[str]) -> str:
    r"""A module docstring's first paragraph as one line of plain text (reST's ``literals`` and
    :func:`roles` unwrapped), for a parser's description: never cut mid-sentence.

    >>> first_line("``rocketfilter why``: why a group did, or did not,\n:func:`consume` one.\n\nMore.")
    'rocketfilter why: why a group did, or did not, consume one.'
    """
    paragraph = (doc or "").strip().split("\n\n")[0]
    text = " ".join(paragraph.split())
    text = re.sub(r":[\w:]+:`~?([^`]+)`", r"\1", text)
    return re.sub(r"``([^`]+)``", r"\1", text)
