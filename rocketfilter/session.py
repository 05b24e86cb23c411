"""A SparkSession that works offline on one small machine.

Like delta's ``configure_spark_with_delta_pip``, :func:`configure_spark` decorates the caller's
builder instead of owning it: every default is added only where nothing set that key already.
"""
from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path
from typing import Dict, Optional, Union

from pyspark import SparkContext
from pyspark.sql import SparkSession

# Keys rocketfilter sets when nobody else did; values are strings as SparkConf holds them.
_DEFAULTS: Dict[str, str] = {
    # More than 32 explicit paths otherwise start a parallel listing job (2 s per 1,000 paths).
    "spark.sql.sources.parallelPartitionDiscovery.threshold": "100000",
    "spark.sql.shuffle.partitions": "8",
    # toPandas of a few million strings runs out of the default 1g heap.
    "spark.driver.memory": "2g",
    "spark.sql.session.timeZone": "UTC",
    # PySpark 4 otherwise ships the Python call site to the JVM on every Column operation,
    # which makes compiling a selector 3-5x slower.
    "spark.python.sql.dataFrameDebugging.enabled": "false",
}
_TESTING_DEFAULTS: Dict[str, str] = {
    "spark.sql.shuffle.partitions": "2",
    "spark.ui.enabled": "false",
}
_DEFAULT_MASTER = "local[*]"
_TESTING_MASTER = "local[2]"


def _spark_defaults_file() -> Optional[Path]:
    """The spark-defaults.conf spark-submit would read, if any."""
    conf_dir = os.environ.get("SPARK_CONF_DIR")
    if not conf_dir and os.environ.get("SPARK_HOME"):
        conf_dir = os.path.join(os.environ["SPARK_HOME"], "conf")
    if not conf_dir:
        return None
    path = Path(conf_dir) / "spark-defaults.conf"
    return path if path.is_file() else None


def _conf_set_elsewhere() -> Dict[str, str]:
    """Settings that reach the SparkConf without passing through the builder.

    Under spark-submit the JVM already holds them as system properties; for a plain ``python``
    run they come from ``PYSPARK_SUBMIT_ARGS``, ``MASTER`` and spark-defaults.conf.
    """
    found: Dict[str, str] = {}
    path = _spark_defaults_file()
    if path is not None:
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            parts = line.strip().split(None, 1)
            if len(parts) == 2 and not parts[0].startswith("#"):
                found[parts[0]] = parts[1].strip()
    if os.environ.get("MASTER"):
        found["spark.master"] = os.environ["MASTER"]
    args = shlex.split(os.environ.get("PYSPARK_SUBMIT_ARGS", ""))
    flag_keys = {"--master": "spark.master", "--driver-memory": "spark.driver.memory"}
    for i, arg in enumerate(args[:-1]):
        if arg in flag_keys:
            found[flag_keys[arg]] = args[i + 1]
        elif arg == "--conf" and "=" in args[i + 1]:
            key, value = args[i + 1].split("=", 1)
            found[key] = value
    if os.environ.get("PYSPARK_GATEWAY_PORT"):
        # Launched by spark-submit: the JVM's system properties are the submitted conf.
        from pyspark import SparkConf

        SparkContext._ensure_initialized()
        found.update(dict(SparkConf().getAll()))
    return found


def configure_spark(builder: SparkSession.Builder, *, testing: bool = False) -> SparkSession.Builder:
    """Add rocketfilter's defaults to ``builder`` without overriding anything already set.

    A key counts as set when it is on the builder, in ``PYSPARK_SUBMIT_ARGS``, in
    spark-defaults.conf, or (for the master) in ``MASTER``; under spark-submit the submitted
    conf wins. ``testing=True`` asks for local[2], 2 shuffle partitions and no UI.

    Also points ``PYSPARK_PYTHON``/``PYSPARK_DRIVER_PYTHON`` at this interpreter when unset, since
    workers otherwise start the system Python, which may lack pyarrow.

    >>> from pyspark.sql import SparkSession
    >>> builder = SparkSession.builder.appName("mine").config("spark.sql.shuffle.partitions", "64")
    >>> spark = configure_spark(builder, testing=True).getOrCreate()   # doctest: +SKIP
    >>> spark.conf.get("spark.sql.shuffle.partitions")                  # doctest: +SKIP
    '64'
    """
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)

    taken = set(builder._options) | set(_conf_set_elsewhere())
    wanted = dict(_DEFAULTS)
    if testing:
        wanted.update(_TESTING_DEFAULTS)
    wanted["spark.master"] = _TESTING_MASTER if testing else _DEFAULT_MASTER
    if os.environ.get("PYSPARK_GATEWAY_PORT") or SparkContext._active_spark_context is not None:
        # The driver JVM already runs: its heap can no longer change, so don't pretend.
        del wanted["spark.driver.memory"]
    for key, value in wanted.items():
        if key not in taken:
            builder = builder.config(key, value)
    return builder


def get_spark(
    spark_or_builder: Union[SparkSession, SparkSession.Builder, None] = None,
    *,
    app_name: str = "rocketfilter",
    testing: bool = False,
) -> SparkSession:
    """Return a ready SparkSession.

    An existing session is returned as is; a builder is decorated by :func:`configure_spark` and
    then ``getOrCreate``-d. ``None`` returns the active session if there is one (a notebook's or
    spark-submit's, left untouched), else starts from a fresh builder named ``app_name``.

    >>> spark = get_spark()                                  # doctest: +SKIP
    >>> get_spark(spark) is spark                            # doctest: +SKIP
    True
    >>> builder = SparkSession.builder.master("local[1]")
    >>> get_spark(builder, testing=True).sparkContext.master # doctest: +SKIP
    'local[1]'
    """
    if isinstance(spark_or_builder, SparkSession):
        return spark_or_builder
    if spark_or_builder is None:
        active = SparkSession.getActiveSession()
        if active is not None:
            return active
        spark_or_builder = SparkSession.builder.appName(app_name)
    elif not isinstance(spark_or_builder, SparkSession.Builder):
        raise TypeError(
            "get_spark: expected a SparkSession, a SparkSession.Builder or None, got "
            f"{type(spark_or_builder).__name__}"
        )
    return configure_spark(spark_or_builder, testing=testing).getOrCreate()
