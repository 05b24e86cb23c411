"""A separate Python environment for Delta Lake's own Spark connector.

No ``io.delta`` release supports Spark 4.3 yet: the newest, ``delta-spark_4.2_2.13:4.4.0``
(Maven Central), fails on pyspark 4.3 with ``NoSuchMethodError`` (``LogicalRDD.<init>``) at the
first read, and delta-spark 4.4.1's jars are not on Maven Central. So the Delta connector check
runs in a virtual environment of its own with the pyspark that release is built for (4.2.0),
created here on first use (``python -m tests.delta_readers.delta_spark_env`` creates it ahead,
as ``.ci/run`` does) under ``$ROCKETFILTER_DELTA_SPARK_VENV`` or ``~/.cache/rocketfilter``.
Nothing of rocketfilter is installed there: the reader script reads only the Delta tables.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

PYSPARK = "4.2.0"
# The Delta Lake connector for Spark 4.2, fetched by Ivy from Maven Central at session start.
DELTA_PACKAGE = "io.delta:delta-spark_4.2_2.13:4.4.0"
_READY = ".rocketfilter-ready"


def venv_dir() -> Path:
    default = Path.home() / ".cache" / "rocketfilter" / f"venv-delta-spark-pyspark-{PYSPARK}"
    return Path(os.environ.get("ROCKETFILTER_DELTA_SPARK_VENV", default))


def python() -> str:
    """The environment's interpreter, creating the environment first when it is not complete."""
    venv = venv_dir()
    executable = venv / "bin" / "python"
    if not (venv / _READY).exists():
        subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True)
        subprocess.run([str(executable), "-m", "pip", "install", "--quiet", f"pyspark=={PYSPARK}"], check=True)
        (venv / _READY).write_text(f"pyspark=={PYSPARK}\n")
    return str(executable)


if __name__ == "__main__":
    print(python())
