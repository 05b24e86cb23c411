"""A SparkSession that works offline on one small machine, quietly, classic or Spark Connect.

Like delta's ``configure_spark_with_delta_pip``, :func:`configure_spark` decorates the caller's
builder instead of owning it: every default is added only where nothing set that key already.
Unless ``verbose``, Spark logs only the warnings that matter (:mod:`rocketfilter.spark_logs`)
and draws no stage progress bars. A Spark Connect session or builder (``.remote(...)``) is
accepted too; on a remote server only the portable SQL settings apply.
"""
from __future__ import annotations

import logging
import os
import re
import shlex
import sys
import warnings
from pathlib import Path
from typing import Any, Dict, Optional

from pyspark import SparkContext
from pyspark.sql import SparkSession

from rocketfilter.delta.object_store import HadoopAwsMissingError, hadoop_aws_package, needs_hadoop_aws
from rocketfilter.hooks import run_session_hooks
from rocketfilter.spark_logs import LOG4J2_PROPERTIES, log4j2_java_option, names_log_config, quiet_spark_logs
from rocketfilter.spark_mode import is_connect

log = logging.getLogger(__name__)

__all__ = ["configure_spark", "get_spark", "is_connect", "quiet_spark_logs", "LOG4J2_PROPERTIES"]

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
    # Spark's own advice for HotSpot: the JVM never compiles a method over 8000 bytes of
    # bytecode, so such a whole-stage method runs interpreted. A put with three promoted
    # properties made one: 19.3 s per million messages instead of 3.1 s (measured).
    "spark.sql.codegen.hugeMethodLimit": "8000",
}
_TESTING_DEFAULTS: Dict[str, str] = {
    "spark.sql.shuffle.partitions": "2",
    "spark.ui.enabled": "false",
    # Tests run many tiny queries, where adaptive execution's re-planning costs more than it
    # saves (measured: tests/pull ran 6% faster without it); answers do not depend on it.
    "spark.sql.adaptive.enabled": "false",
}
# Settings that still apply to a session that already runs (SQL runtime settings; the others,
# dataFrameDebugging included, are static).
_RUNTIME_KEYS = frozenset({
    "spark.sql.sources.parallelPartitionDiscovery.threshold", "spark.sql.shuffle.partitions",
    "spark.sql.session.timeZone", "spark.sql.codegen.hugeMethodLimit", "spark.sql.adaptive.enabled",
})
# What a remote Spark Connect server gets: its cluster's sizing (memory, shuffle partitions) is
# not this machine's business.
_REMOTE_KEYS = frozenset({"spark.sql.sources.parallelPartitionDiscovery.threshold", "spark.sql.session.timeZone"})
# Start-up settings rocketfilter may add: they cannot change on a running session.
_STATIC_KEYS = ("spark.driver.memory", "spark.driver.extraJavaOptions", "spark.ui.enabled",
                "spark.ui.showConsoleProgress", "spark.python.sql.dataFrameDebugging.enabled")
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


def _connect_url(builder: Any) -> Optional[str]:
    """Where a builder's session will live when it is a Spark Connect one: its ``spark.remote``
    (``"local[2]"`` starts a server in this process, ``"sc://..."`` is a server elsewhere), or
    None for a classic builder."""
    options = getattr(builder, "_options", {})
    url = options.get("spark.remote") or os.environ.get("SPARK_REMOTE")
    api_mode = str(options.get("spark.api.mode", os.environ.get("SPARK_API_MODE", ""))).lower()
    if url:
        return str(url)
    if is_connect(builder):
        return "sc://"  # a Connect builder with a channel builder: a server elsewhere
    if api_mode == "connect":
        return str(options.get("spark.master", os.environ.get("MASTER", "local")))
    return None


def configure_spark(builder: SparkSession.Builder, *, testing: bool = False,
                    verbose: bool = False, store: Optional[str] = None) -> SparkSession.Builder:
    """Add rocketfilter's defaults to ``builder`` without overriding anything already set.

    A key counts as set when it is on the builder, in ``PYSPARK_SUBMIT_ARGS``, in
    spark-defaults.conf, or (for the master) in ``MASTER``; under spark-submit the submitted
    conf wins. ``testing=True`` asks for local[2], 2 shuffle partitions, no UI and no adaptive
    execution. Unless ``verbose``, Spark gets rocketfilter's log4j rules (as
    ``spark.driver.extraJavaOptions``, when that is not set) and
    ``spark.ui.showConsoleProgress=false``. Settings that can no
    longer take effect (the JVM or the SparkContext already runs) are left out.

    A Spark Connect builder (``SparkSession.builder.remote(url)``) to a remote server gets only
    the session time zone, the listing threshold and, with ``testing``, 2 shuffle partitions;
    ``remote("local[...]")`` starts a local server, which gets the classic defaults but the
    master.

    A session for an S3 store (``store="s3://..."``, or with no ``store`` an environment that
    sets ``AWS_ENDPOINT_URL`` or ``AWS_ACCESS_KEY_ID``) gets hadoop-aws, the version matching
    pyspark's Hadoop, added to ``spark.jars.packages`` (fetched once from Maven Central into
    Ivy's cache), unless a hadoop-aws is already among the packages or jars.

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

    elsewhere = _conf_set_elsewhere()
    taken = set(builder._options) | set(elsewhere)
    wanted = dict(_DEFAULTS)
    if testing:
        wanted.update(_TESTING_DEFAULTS)
    url = _connect_url(builder)
    if url is not None and not url.startswith("local"):
        keys = _REMOTE_KEYS | ({"spark.sql.shuffle.partitions"} if testing else set())
        wanted = {k: v for k, v in wanted.items() if k in keys}
    else:
        if url is None:  # a Connect URL is the master: setting both is an error
            wanted["spark.master"] = _TESTING_MASTER if testing else _DEFAULT_MASTER
        if not verbose:
            wanted["spark.ui.showConsoleProgress"] = "false"
            option = log4j2_java_option()
            java_options = str(builder._options.get("spark.driver.extraJavaOptions",
                                                    elsewhere.get("spark.driver.extraJavaOptions", "")))
            if option and not names_log_config(java_options):
                # When someone else's options are set, quiet_spark_logs applies the rules once the
                # JVM runs instead.
                wanted["spark.driver.extraJavaOptions"] = option
        if (os.environ.get("PYSPARK_GATEWAY_PORT") or SparkContext._gateway is not None
                or SparkContext._active_spark_context is not None):
            # The driver JVM already runs: its heap and options can no longer change.
            del wanted["spark.driver.memory"]
            wanted.pop("spark.driver.extraJavaOptions", None)
        if SparkContext._active_spark_context is not None:
            # So does the context: only SQL runtime settings would reach the session.
            wanted = {k: v for k, v in wanted.items() if k in _RUNTIME_KEYS}
        elif (SparkContext._gateway is None and not os.environ.get("PYSPARK_GATEWAY_PORT")
              and needs_hadoop_aws(store)):
            # Packages are resolved when the JVM starts (spark-submit's own: its --packages).
            builder = _with_hadoop_aws(builder, elsewhere)
    for key, value in wanted.items():
        if key not in taken:
            builder = builder.config(key, value)
    return builder


def _with_hadoop_aws(builder: SparkSession.Builder, elsewhere: Dict[str, str]) -> SparkSession.Builder:
    """``builder`` with hadoop-aws added to ``spark.jars.packages`` (kept: what is there)."""
    options = builder._options
    packages = str(options.get("spark.jars.packages", elsewhere.get("spark.jars.packages", "")))
    jars = str(options.get("spark.jars", elsewhere.get("spark.jars", "")))
    if "hadoop-aws" in packages or "hadoop-aws" in jars:
        return builder
    package = hadoop_aws_package()
    return builder.config("spark.jars.packages", f"{packages},{package}" if packages else package)


def _is_session(value: Any) -> bool:
    return isinstance(value, SparkSession) or (is_connect(value) and hasattr(value, "sql"))


def _is_builder(value: Any) -> bool:
    return isinstance(value, SparkSession.Builder) or (is_connect(value) and hasattr(value, "getOrCreate"))


def get_spark(
    spark_or_builder: Any = None,
    *,
    app_name: str = "rocketfilter",
    testing: bool = False,
    verbose: bool = False,
    store: Optional[str] = None,
) -> SparkSession:
    """Return a ready SparkSession, classic or Spark Connect, with the ``rocketmq`` data source
    registered (:mod:`rocketfilter.source`).

    An existing session (classic or Connect) is returned as is; a builder (classic, or Connect
    through ``.remote(url)``) is decorated by :func:`configure_spark` and then
    ``getOrCreate``-d. ``None`` returns the active session if there is one (a notebook's or
    spark-submit's, left untouched), else starts from a fresh builder named ``app_name``.

    Unless ``verbose``, a session this call starts logs quietly: see :func:`quiet_spark_logs`,
    applied before the SparkContext starts when the JVM already runs (spark-submit) and again
    right after. ``verbose=True`` leaves Spark's own logging and progress bars as they are.
    ``store`` is the store the session is for: an S3 one puts hadoop-aws on the classpath of a
    session this call starts (see :func:`configure_spark`); when it cannot be fetched, the error
    says so.

    >>> spark = get_spark()                                  # doctest: +SKIP
    >>> get_spark(spark) is spark                            # doctest: +SKIP
    True
    >>> builder = SparkSession.builder.master("local[1]")
    >>> get_spark(builder, testing=True).sparkContext.master # doctest: +SKIP
    'local[1]'
    >>> remote = SparkSession.builder.remote("sc://localhost:15002")
    >>> is_connect(get_spark(remote))                        # doctest: +SKIP
    True
    """
    if _is_session(spark_or_builder):
        return _with_source(spark_or_builder)
    if spark_or_builder is None:
        active = SparkSession.getActiveSession()
        if active is not None:
            return _with_source(active)
        spark_or_builder = SparkSession.builder.appName(app_name)
    elif not _is_builder(spark_or_builder):
        raise TypeError(
            "get_spark: expected a SparkSession (classic or Spark Connect), a SparkSession.Builder "
            f"or None, got {type(spark_or_builder).__name__}"
        )
    builder = configure_spark(spark_or_builder, testing=testing, verbose=verbose, store=store)
    url = _connect_url(builder)
    jvm_here = url is None or url.startswith("local")  # else the server's JVM is not ours
    if jvm_here:
        quiet_spark_logs(verbose=verbose)  # a JVM that already runs: before the context starts
    with warnings.catch_warnings():
        if url is not None:
            # remote("local[...]"): the server starts with these settings, then pyspark tries to
            # set them again on the client session and warns that static ones cannot change.
            keys = "|".join(re.escape(k) for k in _STATIC_KEYS)
            warnings.filterwarnings("ignore", message=f"Failed to set ({keys}) ", category=UserWarning)
        try:
            spark = builder.getOrCreate()
        except Exception as error:
            packages = str(builder._options.get("spark.jars.packages", ""))
            if "hadoop-aws" not in packages:
                raise
            raise HadoopAwsMissingError(
                f"Spark could not start with spark.jars.packages={packages} (hadoop-aws, needed to "
                "read a store on S3, is fetched from Maven Central into ~/.ivy2.5.2 on the first "
                f"start; is Maven Central reachable?): {str(error).strip().splitlines()[0]}") from error
    if jvm_here:
        quiet_spark_logs(verbose=verbose)  # starting the context may have put Spark's profile back
    return _with_source(spark)


def _with_source(spark):
    """``spark`` with the ``rocketmq`` data source registered (once per session), by the hook
    the package registers (:mod:`rocketfilter.hooks`). A session that cannot take it (a Connect
    server without Python data sources) is still returned, with a warning: only
    ``format("rocketmq")`` is then missing."""
    run_session_hooks(spark)
    return spark
