"""spark-submit entry point of ``rocketfilter pull``; what it does and its options are in
rocketfilter/jobs/pull.py (``--help`` lists them).

    spark-submit spark_jobs/pull.py --store /data/rf-store --topic OrderEvents --group GID_orders --sql "amount > 100.0"
"""
import os
import sys

try:
    import rocketfilter  # noqa: F401
except ImportError:  # a plain checkout: use the package next to this folder
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from rocketfilter.jobs import pull as job  # noqa: E402


def main(argv=None) -> int:
    return job.main(argv, prog="pull.py")


if __name__ == "__main__":
    sys.exit(main())
