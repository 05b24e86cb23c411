"""spark-submit entry point of ``rocketfilter demo``; what it does and its options are in
rocketfilter/jobs/demo.py (``--help`` lists them).

    python spark_jobs/demo.py
    spark-submit spark_jobs/demo.py --tags "TAG_A || TAG_C" --selector "age > 5"
"""
import os
import sys

try:
    import rocketfilter  # noqa: F401
except ImportError:  # a plain checkout: use the package next to this folder
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from rocketfilter.jobs import demo as job  # noqa: E402


def main(argv=None) -> int:
    return job.main(argv, prog="demo.py")


if __name__ == "__main__":
    sys.exit(main())
