"""Spark or pyarrow for a small command (``why``, ``pull``): ``--engine auto|arrow|spark``.

A trace reads a few hundred rows, and so does each pull; starting Spark's JVM for them costs
most of the command's time. With ``auto`` (the default) such work is read from the Delta files
with pyarrow on the driver (:mod:`rocketfilter.pull.arrow_window`, same answers) when nothing
asks for Spark:
no ``--master`` / ``--remote`` / ``$SPARK_REMOTE``, no session handed in or already running, not
under spark-submit, and a store that needs no repair (a ConsumeQueue that lags its CommitLog is
dispatched by Spark on open). ``spark`` always starts Spark; ``arrow`` never does.
"""
from __future__ import annotations

import argparse
import os
from typing import Optional

ENGINES = ("auto", "arrow", "spark")


def add_engine_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--engine", choices=ENGINES, default="auto",
                        help="auto (default): small work is read with pyarrow, without starting Spark, "
                             "unless --master/--remote is given; arrow or spark: always that one")


def spark_wanted(args: argparse.Namespace, spark=None) -> bool:
    """Whether something asks for Spark: a session given or running, --master / --remote, or
    $SPARK_REMOTE, or a spark-submit driver."""
    if spark is not None or getattr(args, "master", None) or getattr(args, "remote", None):
        return True
    if os.environ.get("SPARK_REMOTE") or os.environ.get("PYSPARK_GATEWAY_PORT"):
        return True
    from pyspark.sql import SparkSession

    return SparkSession.getActiveSession() is not None


def use_arrow(args: argparse.Namespace, small: bool = True, spark=None) -> bool:
    """Whether the command reads with pyarrow: ``--engine arrow``, or ``auto`` for ``small``
    work (pulls always are: each reads one bounded window) that nothing asks Spark for.
    ValueError for ``--engine arrow`` with --master/--remote."""
    engine = getattr(args, "engine", "auto") or "auto"
    if engine == "arrow":
        if getattr(args, "master", None) or getattr(args, "remote", None):
            raise ValueError("--engine arrow reads on this machine without Spark; it takes no --master or --remote")
        return True
    return engine == "auto" and small and not spark_wanted(args, spark)


def open_store_without_spark(args: argparse.Namespace, force: bool = False):
    """The store at ``--store`` with no Spark session (its pulls read with pyarrow), or None when
    it needs the repair that opening with Spark does (undispatched CommitLog rows), unless
    ``force`` (``--engine arrow``: then its ConsumeQueue is read as it is)."""
    from rocketfilter.jobs import common
    from rocketfilter.store import MessageStore
    from rocketfilter.store import schema as S
    from rocketfilter.store.state import DISPATCH_APP_ID

    broker_config, store_config = common.check_settings(args)
    store = MessageStore(args.store, None, store_config, broker_config=broker_config, create=False)
    store.check_files()
    dispatched = max(store.consumequeue_state().dispatched,
                     store.table(S.CONSUMEQUEUE).transaction_version(DISPATCH_APP_ID) or 0)
    if dispatched < store.commitlog_state().next_commitlog_offset and not force:
        return None
    store.pull_engine = "arrow"
    return store


def local_time_zone() -> str:
    """The zone Spark's session would use by default (the JVM's, i.e. this machine's): ``$TZ``,
    else ``/etc/localtime``'s name, else UTC."""
    zone = os.environ.get("TZ", "").lstrip(":")
    if zone:
        return zone
    try:
        target = os.path.realpath("/etc/localtime")
    except OSError:
        return "UTC"
    return target.split("zoneinfo/", 1)[1] if "zoneinfo/" in target else "UTC"


def session_time_zone(args: argparse.Namespace, spark=None) -> Optional[str]:
    """``spark.sql.session.timeZone`` of the session, or without one of ``--conf``, else local."""
    if spark is not None:
        return spark.conf.get("spark.sql.session.timeZone", "UTC")
    return dict(getattr(args, "conf", None) or ()).get("spark.sql.session.timeZone") or local_time_zone()
