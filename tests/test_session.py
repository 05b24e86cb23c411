"""configure_spark adds defaults without overriding anything set elsewhere; get_spark's inputs;
quiet logging (the package's log4j rules) unless verbose; Spark Connect builders."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from rocketfilter.session import LOG4J2_PROPERTIES, configure_spark, get_spark, quiet_spark_logs

REPO = Path(__file__).resolve().parents[1]


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
    """Pretend no JVM or SparkContext runs yet (the suite's session may), as in a fresh process."""
    from pyspark import SparkContext

    monkeypatch.setattr(SparkContext, "_active_spark_context", None)
    monkeypatch.setattr(SparkContext, "_gateway", None)


def test_defaults_on_a_bare_builder(clean_env, no_jvm):
    opts = _options(configure_spark(SparkSession.Builder()))
    assert opts["spark.master"] == "local[*]"
    assert opts["spark.sql.sources.parallelPartitionDiscovery.threshold"] == "100000"
    assert opts["spark.sql.shuffle.partitions"] == "8"
    assert opts["spark.driver.memory"] == "2g"
    assert opts["spark.sql.session.timeZone"] == "UTC"
    assert opts["spark.sql.codegen.hugeMethodLimit"] == "8000"
    assert "spark.ui.enabled" not in opts


def test_the_huge_method_limit_reaches_a_running_session(spark):
    """A runtime setting: the suite's session (get_spark(testing=True)) has it."""
    assert spark.conf.get("spark.sql.codegen.hugeMethodLimit") == "8000"


def test_testing_defaults(clean_env, no_jvm):
    opts = _options(configure_spark(SparkSession.Builder(), testing=True))
    assert (opts["spark.master"], opts["spark.sql.shuffle.partitions"], opts["spark.ui.enabled"],
            opts["spark.sql.adaptive.enabled"]) == ("local[2]", "2", "false", "false")


def test_driver_memory_left_alone_once_the_jvm_runs(clean_env, monkeypatch):
    from pyspark import SparkContext

    monkeypatch.setattr(SparkContext, "_active_spark_context", object())
    assert "spark.driver.memory" not in _options(configure_spark(SparkSession.Builder()))


def test_builder_settings_win(clean_env, no_jvm):
    builder = SparkSession.Builder().master("local[1]").config("spark.sql.shuffle.partitions", "64")
    builder = builder.config("spark.driver.memory", "6g")
    opts = _options(configure_spark(builder, testing=True))
    assert (opts["spark.master"], opts["spark.sql.shuffle.partitions"], opts["spark.driver.memory"]) == (
        "local[1]", "64", "6g")
    assert opts["spark.ui.enabled"] == "false"


def test_master_from_env_is_respected(clean_env, no_jvm, monkeypatch):
    monkeypatch.setenv("MASTER", "local[3]")
    assert "spark.master" not in _options(configure_spark(SparkSession.Builder()))


def test_submit_args_are_respected(clean_env, no_jvm, monkeypatch):
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


# --- quiet by default -------------------------------------------------------------------------

def test_quiet_by_default(clean_env, no_jvm):
    opts = _options(configure_spark(SparkSession.Builder()))
    assert opts["spark.ui.showConsoleProgress"] == "false"
    assert opts["spark.driver.extraJavaOptions"] == f"-Dlog4j2.configurationFile={LOG4J2_PROPERTIES.as_uri()}"
    assert LOG4J2_PROPERTIES.is_file()


def test_verbose_leaves_spark_logging_alone(clean_env, no_jvm):
    opts = _options(configure_spark(SparkSession.Builder(), verbose=True))
    assert "spark.ui.showConsoleProgress" not in opts and "spark.driver.extraJavaOptions" not in opts


def test_java_options_set_elsewhere_are_kept(clean_env, no_jvm, monkeypatch):
    builder = SparkSession.Builder().config("spark.driver.extraJavaOptions", "-Xss4m")
    assert _options(configure_spark(builder))["spark.driver.extraJavaOptions"] == "-Xss4m"
    monkeypatch.setenv("PYSPARK_SUBMIT_ARGS", "--conf spark.driver.extraJavaOptions="
                       "-Dlog4j2.configurationFile=/etc/mine.properties pyspark-shell")
    assert "spark.driver.extraJavaOptions" not in _options(configure_spark(SparkSession.Builder()))


def test_a_running_context_gets_only_runtime_settings(clean_env, monkeypatch):
    from pyspark import SparkContext

    monkeypatch.setattr(SparkContext, "_active_spark_context", object())
    opts = _options(configure_spark(SparkSession.Builder(), testing=True))
    assert opts == {"spark.sql.sources.parallelPartitionDiscovery.threshold": "100000",
                    "spark.sql.shuffle.partitions": "2", "spark.sql.session.timeZone": "UTC",
                    "spark.sql.codegen.hugeMethodLimit": "8000", "spark.sql.adaptive.enabled": "false"}


def test_a_remote_connect_builder_gets_portable_settings_only(clean_env, no_jvm):
    builder = SparkSession.builder.remote("sc://example.invalid:15002")
    assert _options(configure_spark(builder, testing=True)) == {
        "spark.remote": "sc://example.invalid:15002",
        "spark.sql.sources.parallelPartitionDiscovery.threshold": "100000",
        "spark.sql.shuffle.partitions": "2", "spark.sql.session.timeZone": "UTC"}


def test_a_local_connect_builder_is_configured_but_its_master(clean_env, no_jvm):
    opts = _options(configure_spark(SparkSession.builder.remote("local[2]")))
    assert opts["spark.remote"] == "local[2]" and "spark.master" not in opts
    assert opts["spark.driver.memory"] == "2g" and opts["spark.ui.showConsoleProgress"] == "false"


def _log_config_location(spark) -> str:
    context = spark._jvm.org.apache.logging.log4j.LogManager.getContext(False)
    return str(context.getConfiguration().getConfigurationSource().getLocation())


def _set_log_config(spark, uri: str) -> None:
    spark._jvm.org.apache.logging.log4j.LogManager.getContext(False).setConfigLocation(spark._jvm.java.net.URI(uri))


def test_the_suite_jvm_logs_by_the_package_rules(spark):
    assert Path(_log_config_location(spark)).resolve() == LOG4J2_PROPERTIES
    assert quiet_spark_logs(spark) is True
    assert quiet_spark_logs(spark, verbose=True) is False


def test_spark_default_profile_is_replaced_a_chosen_one_kept(spark, tmp_path):
    default = spark._jvm.java.lang.Thread.currentThread().getContextClassLoader().getResource(
        "org/apache/spark/log4j2-defaults.properties")
    mine = tmp_path / "mine.properties"
    mine.write_text(LOG4J2_PROPERTIES.read_text(encoding="utf-8"), encoding="utf-8")
    try:
        _set_log_config(spark, str(default.toURI().toString()))
        assert quiet_spark_logs(spark) is True
        assert Path(_log_config_location(spark)).resolve() == LOG4J2_PROPERTIES
        _set_log_config(spark, mine.as_uri())
        assert quiet_spark_logs(spark) is False  # somebody chose this one
        assert Path(_log_config_location(spark)).resolve() == mine.resolve()
    finally:
        _set_log_config(spark, LOG4J2_PROPERTIES.as_uri())


def test_conf_copy_matches_the_package_rules():
    """conf/log4j2.properties is the same file, for spark-submit --driver-java-options."""
    assert (REPO / "conf" / "log4j2.properties").read_text(encoding="utf-8") == LOG4J2_PROPERTIES.read_text(encoding="utf-8")


def test_the_demo_job_prints_no_spark_logs_or_python_warnings():
    """A real run in a fresh process: stderr holds only the JVM's own start-up notice."""
    env = {k: v for k, v in os.environ.items() if k not in ("SPARK_CONNECT_MODE_ENABLED", "PYSPARK_SUBMIT_ARGS")}
    env["PYTHONPATH"] = str(REPO)
    done = subprocess.run([sys.executable, "-W", "default", "spark_jobs/demo.py", "--master", "local[1]"],
                          cwd=REPO, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "delivered: 7 of 10" in done.stdout
    noise = [line for line in done.stderr.splitlines()
             if line.strip() and not line.startswith("WARNING: Using incubator modules")]
    assert noise == [], done.stderr
