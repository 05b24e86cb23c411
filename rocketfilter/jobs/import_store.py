"""``rocketfilter import``: a RocketMQ broker's store directory into a new or empty rocketfilter store.

    rocketfilter import --store /data/rf-store --source /data/broker/store
    rocketfilter import --store s3://bucket/rf --source s3://bucket/broker --skip-damaged

``--source`` holds ``commitlog/`` and ``consumequeue/`` (and ``config/*.json``, whose committed
offsets, topics, subscription groups and filter data come along). Damage (bad magic code,
truncated record, CRC mismatch, a consume-queue unit that disagrees with its record, a malformed
config file) stops the import with one line naming the file and byte offset, exit 2;
``--skip-damaged`` imports the rest and reports it. A missing source, or a target store that
already holds messages, exits 1 before Spark starts. Progress (commit-log files done of total)
shows on stderr for an import of more than a few seconds, unless ``--verbose``.
"""
from __future__ import annotations

import argparse
from typing import Optional, Sequence

from rocketfilter.jobs import common

NAME = "import"
HELP = "import a RocketMQ broker's store (commitlog/, consumequeue/, config/)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    common.add_store_argument(parser, "the rocketfilter store to import into (new or empty)")
    parser.add_argument("--source", required=True, metavar="PATH",
                        help="the broker's store directory or URI (holding commitlog/)")
    parser.add_argument("--skip-damaged", action="store_true",
                        help="count and leave out damaged records, units and config files instead of stopping")
    common.add_spark_arguments(parser)
    parser.set_defaults(handler=run)


def register(subparsers) -> None:
    add_arguments(subparsers.add_parser(NAME, help=HELP, description=common.first_line(__doc__)))


def summary(report) -> str:
    """One line of counts from the importer's report, then one line per broker config file
    (``config/consumerOffset.json``, ``topics.json``, ...): what it brought, or why it was skipped."""
    text = (f"imported {report.messages} messages from {report.commitlog_files} commit-log files,"
            f" {report.cq_units} consume-queue units from {report.consumequeue_files} files,"
            f" {len(report.topics)} topics")
    if getattr(report, "cq_units_rebuilt", 0):
        text += (f"; rebuilt {report.cq_units_rebuilt} consume-queue units from the commit log"
                 " (their unit files were damaged or missing)")
    if report.damaged_count:
        first = report.damaged[0]
        text += (f"; skipped {report.damaged_count} damaged items"
                 f" (first: {first.file}: byte {first.byte_offset}: {first.reason})")
    return "\n".join([text, *(report.config.lines() if report.config is not None else ())])


def check(args: argparse.Namespace) -> None:
    """Everything that needs no Spark: the settings, the source (a broker store, with config files
    that read), and a target that is new or holds no messages."""
    from rocketfilter.store import schema as S
    from rocketfilter.store.config_files import read_broker_config
    from rocketfilter.store.errors import StoreNotEmptyError
    from rocketfilter.broker_files.import_listing import require_store_dir
    from rocketfilter.store.tables import store_exists

    broker_config, _ = common.check_settings(args)
    require_store_dir(args.source)
    read_broker_config(args.source, skip_damaged=args.skip_damaged, broker_config=broker_config)
    if store_exists(args.store, common.storage_options(args)):
        tables = common.peek_store(args)
        if tables.commitlog_state().next_commitlog_offset or tables.table(S.COMMITLOG).files():
            raise StoreNotEmptyError(f"store {tables.uri} already holds messages; import into a new store")


def run(args: argparse.Namespace, spark=None) -> int:
    check(args)
    with common.command_progress(args, "import") as display:
        spark = common.start_spark(args, "rocketfilter-import", spark)
        store = common.open_store(args, spark, create=True)
        report = store.import_store(args.source, skip_damaged=args.skip_damaged,
                                    progress=common.progress_option(args, spark, display))
    print(summary(report))
    return 0


def main(argv: Optional[Sequence[str]] = None, *, spark=None, prog: str = "rocketfilter import") -> int:
    return common.run_standalone(prog, HELP, add_arguments, argv, spark)
