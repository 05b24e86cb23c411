"""configure_spark adds defaults without overriding anything set elsewhere; get_spark's inputs."""
from __future__ import annotations

import sys

import pytest
from pyspark.sql import SparkSession

from rocketfilter.session import configure_spark, get_spark


@pytest.fixture
def clean_env(monkeypatch, tmp_path):
    """No master or conf from the environment, and an empty SPARK_CONF_DIR."""
    for name in ("MASTER", "PYSPARK_SUBMIT_ARGS", "PYSPARK_GATEWAY_PORT", "SPARK_HOME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("SPARK_CONF_DIR", str(tmp_path))
    return tmp_path


def _options(builder) -> dict:
    return dict(builder._options)


@pytest.fixture
def no_jvm(monkeypatch):
    """Pretend no SparkContext runs yet (the suite's session may), as in a fresh process."""
    from pyspark import SparkContext

    monkeypatch.setattr(SparkContext, "_active_spark_context", None)


def test_defaults_on_a_bare_builder(clean_env, no_jvm):
    opts = _options(configure_spark(SparkSession.Builder()))
    assert opts["spark.master"] == "local[*]"
    assert opts["spark.sql.sources.parallelPartitionDiscovery.threshold"] == "100000"
    assert opts["spark.sql.shuffle.partitions"] == "8"
    assert opts["spark.driver.memory"] == "2g"
    assert opts["spark.sql.session.timeZone"] == "UTC"
    assert "spark.ui.enabled" not in opts


def test_testing_defaults(clean_env):
    opts = _options(configure_spark(SparkSession.Builder(), testing=True))
    assert (opts["spark.master"], opts["spark.sql.shuffle.partitions"], opts["spark.ui.enabled"]) == (
        "local[2]", "2", "false")


def test_driver_memory_left_alone_once_the_jvm_runs(clean_env, monkeypatch):
    from pyspark import SparkContext

    monkeypatch.setattr(SparkContext, "_active_spark_context", object())
    assert "spark.driver.memory" not in _options(configure_spark(SparkSession.Builder()))


def test_builder_settings_win(clean_env):
    builder = SparkSession.Builder().master("local[1]").config("spark.sql.shuffle.partitions", "64")
    builder = builder.config("spark.driver.memory", "6g")
    opts = _options(configure_spark(builder, testing=True))
    assert (opts["spark.master"], opts["spark.sql.shuffle.partitions"], opts["spark.driver.memory"]) == (
        "local[1]", "64", "6g")
    assert opts["spark.ui.enabled"] == "false"


def test_master_from_env_is_respected(clean_env, monkeypatch):
    monkeypatch.setenv("MASTER", "local[3]")
    assert "spark.master" not in _options(configure_spark(SparkSession.Builder()))


def test_submit_args_are_respected(clean_env, monkeypatch):
    monkeypatch.setenv("PYSPARK_SUBMIT_ARGS",
                       "--master local[3] --driver-memory 4g --conf spark.sql.shuffle.partitions=3 pyspark-shell")
    opts = _options(configure_spark(SparkSession.Builder()))
    assert not {"spark.master", "spark.driver.memory", "spark.sql.shuffle.partitions"} & set(opts)
    assert opts["spark.sql.session.timeZone"] == "UTC"


def test_spark_defaults_conf_is_respected(clean_env, no_jvm):
    (clean_env / "spark-defaults.conf").write_text(
        "# comment\nspark.master   local[4]\nspark.sql.session.timeZone  Europe/Paris\n", encoding="utf-8")
    opts = _options(configure_spark(SparkSession.Builder()))
    assert "spark.master" not in opts and "spark.sql.session.timeZone" not in opts
    assert opts["spark.driver.memory"] == "2g"


def test_python_for_workers(clean_env, monkeypatch):
    monkeypatch.delenv("PYSPARK_PYTHON", raising=False)
    monkeypatch.setenv("PYSPARK_DRIVER_PYTHON", "/opt/mine/python")
    configure_spark(SparkSession.Builder())
    import os

    assert os.environ["PYSPARK_PYTHON"] == sys.executable
    assert os.environ["PYSPARK_DRIVER_PYTHON"] == "/opt/mine/python"


def test_get_spark_returns_a_session_as_is(spark):
    assert get_spark(spark) is spark
    assert get_spark() is spark  # the active session is reused, not reconfigured


def test_get_spark_rejects_other_types():
    with pytest.raises(TypeError, match="SparkSession.Builder"):
        get_spark("local[2]")


def test_suite_session_is_the_small_one(spark):
    assert spark.sparkContext.master == "local[2]"
    assert spark.conf.get("spark.sql.shuffle.partitions") == "2"
    assert spark.conf.get("spark.sql.session.timeZone") == "UTC"
    assert spark.sparkContext.getConf().get("spark.ui.enabled") == "false"
    assert spark.sparkContext.getConf().get("spark.driver.memory") == "2g"
