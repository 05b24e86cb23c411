"""Quiet Spark: rocketfilter's own output and real warnings, not Spark's INFO chatter.

The rules are in ``rocketfilter/resources/log4j2.properties`` (docs/configuration.md, "Logging
and progress"). A driver JVM that has not started yet gets them as ``-Dlog4j2.configurationFile``
through ``spark.driver.extraJavaOptions`` (:func:`rocketfilter.session.configure_spark`); a JVM
that already runs (spark-submit's, a notebook's or the tests' context) is reconfigured through
py4j by :func:`quiet_spark_logs`. Only Spark's built-in default profile is ever replaced: a
logging configuration someone chose (a ``log4j2.properties`` in ``SPARK_CONF_DIR``, a
``-Dlog4j2.configurationFile`` of their own, Databricks') is left alone.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Optional
from urllib.parse import unquote, urlparse

LOG4J2_PROPERTIES = Path(__file__).resolve().parent / "resources" / "log4j2.properties"
# Spark's built-in profiles: org/apache/spark/log4j2-defaults.properties and its siblings.
_SPARK_PROFILE = "org/apache/spark/log4j2"
_LOG4J_OPTIONS = ("log4j2.configurationFile", "log4j.configurationFile", "log4j.configuration")


def log4j2_java_option() -> Optional[str]:
    """``-Dlog4j2.configurationFile=file:///...`` for rocketfilter's rules, or None if missing.

    A ``file:`` URI needs no quoting in ``extraJavaOptions``, whatever the path holds.
    """
    if not LOG4J2_PROPERTIES.is_file():
        return None
    return f"-Dlog4j2.configurationFile={LOG4J2_PROPERTIES.as_uri()}"


def names_log_config(java_options: str) -> bool:
    """True when JVM options already choose a log4j configuration."""
    return any(f"-D{name}=" in java_options for name in _LOG4J_OPTIONS)


def _is_ours(location: str) -> bool:
    path = unquote(urlparse(location).path) if location.startswith("file:") else location
    try:
        return Path(path).resolve() == LOG4J2_PROPERTIES
    except (OSError, ValueError):
        return False


def quiet_spark_logs(spark=None, *, verbose: bool = False) -> bool:
    """Apply rocketfilter's log4j rules to this process's running driver JVM, if there is one.

    Call it before the SparkContext starts (spark-submit has started the JVM, not the context)
    and again right after: Spark 4 re-applies its own default profile whenever its logging
    re-initializes, which a starting SparkContext does. Returns True when rocketfilter's rules
    are in effect afterwards. ``verbose=True`` changes nothing (Spark's own logging stays), and
    so does a Spark Connect session to a remote server (its JVM is not ours to configure).
    Never raises: logging must not fail the work.

    ``spark`` is accepted for symmetry with the other helpers; the JVM is the process's.

    >>> quiet_spark_logs()    # doctest: +SKIP
    True
    """
    if verbose:
        return False
    try:
        from pyspark import SparkContext

        if SparkContext._gateway is None:
            if not os.environ.get("PYSPARK_GATEWAY_PORT"):
                return False  # no JVM yet: configure_spark passes the rules when it starts
            SparkContext._ensure_initialized()
        jvm = SparkContext._gateway.jvm
        context = jvm.org.apache.logging.log4j.LogManager.getContext(False)
        config = context.getConfiguration()
        location = config.getConfigurationSource().getLocation()
        location = "" if location is None else str(location)
        if not _is_ours(location):
            untouched = config.getClass().getSimpleName() == "DefaultConfiguration"
            if _SPARK_PROFILE not in location and not untouched:
                return False  # somebody chose this configuration
            context.setConfigLocation(jvm.java.net.URI(LOG4J2_PROPERTIES.as_uri()))
    except Exception:  # noqa: BLE001 - a stopped JVM, another log4j: keep its logging
        return False
    try:
        # Spark 4.3 puts its default profile back at every logging re-initialization while this
        # (Scala-private) flag says the default is in effect; it no longer is. Without it (another
        # Spark version) the call after the context starts re-applies the rules.
        logging = getattr(getattr(jvm.org.apache.spark.internal, "Logging$"), "MODULE$")
        getattr(logging, "org$apache$spark$internal$Logging$$defaultSparkLog4jConfig_$eq")(False)
    except Exception:  # noqa: BLE001
        pass
    return True
