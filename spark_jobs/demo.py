"""spark-submit entry point for the rocketfilter demo.

    python spark_jobs/demo.py
    spark-submit spark_jobs/demo.py --tags "TAG_A || TAG_C" --selector "age > 5"

Spark's own log lines and progress bars are hidden unless ``--verbose``.
"""
import os
import sys

try:
    import rocketfilter  # noqa: F401
except ImportError:  # a plain checkout: use the package next to this folder
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from rocketfilter.cli import OneLineArgumentParser, add_verbose_argument, guarded  # noqa: E402
from rocketfilter.demo import add_demo_arguments, demo_command  # noqa: E402


def main(argv=None) -> int:
    parser = OneLineArgumentParser(prog="demo.py", description="Filter ten sample messages by tag and by SQL92.")
    add_demo_arguments(parser)
    add_verbose_argument(parser)
    args = parser.parse_args(argv)
    return guarded(parser.prog, lambda: demo_command(args))


if __name__ == "__main__":
    sys.exit(main())
