"""``get_spark`` and ``rocketfilter.register`` make ``format("rocketmq")`` known to a session that
did not know it: a new session of the suite's context, made the active one (Spark looks a format
name up in the active session's data sources, so registering again elsewhere while another
session is active finds it there), starts without Python data sources."""
from __future__ import annotations

import rocketfilter
from rocketfilter.session import get_spark

from .conftest import TOPIC


def _known(session) -> bool:
    return session._jsparkSession.sessionState().dataSourceManager().dataSourceExists("rocketmq")


def test_get_spark_and_register_register_the_format(spark, source_store):
    jvm_session = spark._jvm.org.apache.spark.sql.classic.SparkSession
    try:
        for make in (get_spark, rocketfilter.register):
            fresh = spark.newSession()
            jvm_session.setActiveSession(fresh._jsparkSession)
            assert not _known(fresh)
            assert make(fresh) is fresh
            assert _known(fresh)
            assert fresh.read.format("rocketmq").options(store=source_store.uri, topic=TOPIC).load().count() > 0
            assert rocketfilter.register(fresh) is fresh   # again: nothing to do
    finally:
        jvm_session.setActiveSession(spark._jsparkSession)


def test_a_session_that_already_resolves_the_format_is_left_as_is(spark):
    fresh = spark.newSession()   # the suite's session, still active, has the format
    assert get_spark(fresh) is fresh and rocketfilter.register(fresh) is fresh
