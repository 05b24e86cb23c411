"""spark-submit entry point of ``rocketfilter replay``; what it does and its options are in
rocketfilter/jobs/replay.py (``--help`` lists them).

    spark-submit spark_jobs/replay.py --store /data/rf-store --topic OrderEvents --tags "TagA || TagB"
    spark-submit spark_jobs/replay.py --store s3://bucket/rf --topic OrderEvents --sql "amount > 100.0" \\
        --group GID_orders --output s3://bucket/replayed --summary
"""
import os
import sys

try:
    import rocketfilter  # noqa: F401
except ImportError:  # a plain checkout: use the package next to this folder
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from rocketfilter.jobs import replay as job  # noqa: E402


def main(argv=None) -> int:
    return job.main(argv, prog="replay.py")


if __name__ == "__main__":
    sys.exit(main())
