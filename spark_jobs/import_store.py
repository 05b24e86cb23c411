"""spark-submit entry point: import a RocketMQ broker's store directory into a rocketfilter store.

    spark-submit spark_jobs/import_store.py --store /data/rf-store --source /data/broker/store
    spark-submit spark_jobs/import_store.py --store s3://bucket/rf --source s3://bucket/broker --skip-damaged

``--source`` holds ``commitlog/`` and ``consumequeue/``. Damage (bad magic code, truncated record,
CRC mismatch, a consume-queue unit that disagrees with its record) stops the import with one
line naming the file and byte offset, exit 2; ``--skip-damaged`` imports the rest and reports it.
A missing source exits 1. There is never a traceback. Spark's own log lines are hidden unless
``--verbose``.
"""
import os
import sys

try:
    import rocketfilter  # noqa: F401
except ImportError:  # a plain checkout: use the package next to this folder
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from rocketfilter.cli import OneLineArgumentParser, add_verbose_argument, guarded  # noqa: E402


def _summary(report) -> str:
    """One line of counts from the importer's report, then one line per broker config file
    (``config/consumerOffset.json``, ``topics.json``, ...): what it brought, or why it was skipped."""
    text = (f"imported {report.messages} messages from {report.commitlog_files} commit-log files,"
            f" {report.cq_units} consume-queue units from {report.consumequeue_files} files,"
            f" {len(report.topics)} topics")
    if report.damaged_count:
        first = report.damaged[0]
        text += (f"; skipped {report.damaged_count} damaged items"
                 f" (first: {first.file}: byte {first.byte_offset}: {first.reason})")
    return "\n".join([text, *(report.config.lines() if report.config is not None else ())])


def main(argv=None) -> int:
    parser = OneLineArgumentParser(prog="import_store.py",
                                   description="Import a RocketMQ broker store (commitlog/, consumequeue/, config/).")
    parser.add_argument("--store", required=True, help="the rocketfilter store URI to import into (new or empty)")
    parser.add_argument("--source", required=True, help="the broker store directory or URI")
    parser.add_argument("--skip-damaged", action="store_true",
                        help="count and leave out damaged records and units instead of stopping")
    add_verbose_argument(parser)
    args = parser.parse_args(argv)

    def run() -> int:
        from rocketfilter.session import get_spark
        from rocketfilter.store import MessageStore
        from rocketfilter.store.importer import require_store_dir

        require_store_dir(args.source)  # before opening (creating) the target store
        spark = get_spark(app_name="rocketfilter-import", verbose=args.verbose)
        report = MessageStore.open(args.store, spark).import_store(args.source, skip_damaged=args.skip_damaged)
        print(_summary(report))
        return 0

    return guarded(parser.prog, run)


if __name__ == "__main__":
    sys.exit(main())
