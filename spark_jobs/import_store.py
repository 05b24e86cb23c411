"""spark-submit entry point of ``rocketfilter import``; what it does and its options are in
rocketfilter/jobs/import_store.py (``--help`` lists them).

    spark-submit spark_jobs/import_store.py --store /data/rf-store --source /data/broker/store
    spark-submit spark_jobs/import_store.py --store s3://bucket/rf --source s3://bucket/broker --skip-damaged
"""
import os
import sys

try:
    import rocketfilter  # noqa: F401
except ImportError:  # a plain checkout: use the package next to this folder
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from rocketfilter.jobs import import_store as job  # noqa: E402


def main(argv=None) -> int:
    return job.main(argv, prog="import_store.py")


if __name__ == "__main__":
    sys.exit(main())
