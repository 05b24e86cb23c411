"""Shared fixtures: one SparkSession for the whole suite, and the conformance case files.

The conformance files were produced by RocketMQ's own Java code; they are ground truth. Every
test reads them through ``Conformance`` (also the ``conformance`` fixture), which reads each file
once per session. The SQL92 cases are also pytest parameters: a test that asks for
``sql92_case`` (sql92_cases.jsonl) or ``typed_case`` (sql92_typed_cases.jsonl), or for their
``..._compiled_case`` subsets, runs once per case with the case id as its test id.
"""
from __future__ import annotations

import json
import os
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path
from typing import Callable, Dict, Tuple

import pytest
from hypothesis import HealthCheck, settings

from tests.jvm_archive import OPTIONS as ARCHIVE_OPTIONS, build_in_background
from tests.short_jvm import add_short_jvm_options, gc_options

# No test may depend on wall-clock speed: hypothesis's per-example deadline (200 ms) and its
# too-slow health check fail on a loaded machine. Tests set their own example counts.
settings.register_profile("rocketfilter", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("rocketfilter")

# The JVMs the suite starts besides the shared session run C1 only (tests/short_jvm.py says why).
# The shared session's JVM starts with the caller's options and, as every JVM here, collects with
# the parallel collector and maps Spark's classes from the suite's archive once it is built
# (tests/jvm_archive.py).
_CALLER_OPTS = os.environ.get("SPARK_SUBMIT_OPTS", "")
_SUBMIT_OPTS = " ".join(filter(None, (_CALLER_OPTS, gc_options(_CALLER_OPTS), ARCHIVE_OPTIONS)))
add_short_jvm_options()
build_in_background()

CONFORMANCE_DIR = Path(__file__).resolve().parent / "conformance"


class Conformance:
    """Loads the fixture files produced by RocketMQ's own Java code (they are ground truth)."""

    directory = CONFORMANCE_DIR

    @staticmethod
    @lru_cache(maxsize=None)
    def json(name: str) -> dict:
        """A ``.json`` file: sections of cases by name."""
        with open(CONFORMANCE_DIR / name, encoding="utf-8") as f:
            return json.load(f)

    @staticmethod
    @lru_cache(maxsize=None)
    def jsonl(name: str) -> Tuple[dict, ...]:
        """A ``.jsonl`` file: one case per line."""
        with open(CONFORMANCE_DIR / name, encoding="utf-8") as f:
            return tuple(json.loads(line) for line in f if line.strip())

    @classmethod
    def cases(cls, name: str, section: str) -> list:
        """The cases of one section of a ``.json`` file, for ``pytest.mark.parametrize``."""
        return cls.json(name)[section]

    @classmethod
    def params(cls, name: str, section: str) -> list:
        """Cases as pytest params whose test id is the case id."""
        return [pytest.param(case, id=case["id"]) for case in cls.cases(name, section)]

    @classmethod
    def compiled(cls, name: str) -> list:
        """The cases of a SQL92 ``.jsonl`` file whose selector compiles."""
        return [case for case in cls.jsonl(name) if case["compiled"]]

    @staticmethod
    @lru_cache(maxsize=None)
    def map_column(expr: str):
        """``expr`` compiled over a ``properties`` map column, once for the whole suite: the
        Spark and the promoted-store conformance tests compile the same ~800 selectors (about
        20 ms of Py4J calls each), and a Column does not depend on the DataFrame it is used in."""
        from rocketfilter.selector import parse
        from rocketfilter.selector.spark import compile_selector

        return compile_selector(parse(expr).ast, "properties")


conformance = Conformance


def rows_by_ansi_mode(spark, df, columns, modes=("true", "false"), engines=("generated",)) -> dict:
    """``df.select("row", *columns)`` collected under each ANSI mode and each of Spark's
    expression ``engines`` (:data:`ENGINES`), ordered by ``row``: ``{(ansi, engine): rows}``.
    Generated code by default: what bulk jobs run."""
    out = {}
    for mode in modes:
        spark.conf.set("spark.sql.ansi.enabled", mode)
        try:
            selected = None
            for engine in engines:
                with spark_engine(spark, engine):
                    query = selected = (df.select("row", *columns) if selected is None
                                        else _replanned(spark, selected))
                    out[mode, engine] = sorted(query.collect(), key=lambda r: r.row)
        finally:
            spark.conf.unset("spark.sql.ansi.enabled")
    return out


def _replanned(spark, df):
    """``df``'s optimized plan as a new DataFrame, planned and run with the session's current
    settings. Analysis and optimization depend on the ANSI mode, not on the expression engine, and
    were most of each run's cost (a chunk of 30 selectors: 12 s analysed and optimized afresh,
    0.8 s from the optimized plan); Spark does not analyse a plan twice, and re-optimizing an
    optimized plan changes nothing."""
    from pyspark.sql import DataFrame

    dataset = spark._jvm.org.apache.spark.sql.classic.Dataset
    return DataFrame(dataset.ofRows(spark._jsparkSession, df._jdf.queryExecution().optimizedPlan()), spark)


@pytest.fixture(scope="session", name="conformance")
def conformance_fixture() -> Conformance:
    return Conformance


@pytest.fixture(scope="session")
def timed_store(spark, tmp_path_factory):
    """A small store with chosen store times (tests/store/store_times.py says what it holds)."""
    from tests.store.store_times import timed_store as build

    return build(spark, str(tmp_path_factory.mktemp("timed") / "store"))


# --- the SQL92 cases as parameters ------------------------------------------------------------

# argument name -> (file, which cases): every case for the compile tests, the compiled ones
# for the evaluation tests.
CASE_PARAMETERS = {
    "sql92_case": ("sql92_cases.jsonl", False),
    "sql92_compiled_case": ("sql92_cases.jsonl", True),
    "typed_case": ("sql92_typed_cases.jsonl", False),
    "typed_compiled_case": ("sql92_typed_cases.jsonl", True),
}


def pytest_generate_tests(metafunc) -> None:
    for argname, (filename, compiled_only) in CASE_PARAMETERS.items():
        if argname in metafunc.fixturenames:
            cases = Conformance.compiled(filename) if compiled_only else Conformance.jsonl(filename)
            metafunc.parametrize(argname, cases, ids=[c["id"] for c in cases])


def _typed_converters() -> Dict[str, Callable]:
    from rocketfilter.javalang import Integer, Long

    return {
        "Integer": lambda v: Integer(int(v)),
        "Long": lambda v: Long(int(v)),
        "Double": float,  # Python's float() reads Java's "NaN", "Infinity", "-0.0", "4.9E-324"
        "Boolean": lambda v: v == "true",
        "String": str,
        "Object": lambda v: object(),  # an arbitrary non-Comparable Java object
    }


def typed_props(spec: dict) -> dict:
    """A case's ``typed_props`` as Python values: ``{"a": {"type": "Integer", "value": "5"}}``
    -> ``{"a": Integer(5)}``."""
    convert = _typed_converters()
    return {name: convert[p["type"]](p.get("value")) for name, p in spec.items()}


@pytest.fixture(name="typed_props", scope="session")
def typed_props_fixture() -> Callable[[dict], dict]:
    """The converter from a case's ``typed_props`` to typed Python values."""
    return typed_props


# --- Spark ------------------------------------------------------------------------------------
# Spark generates and compiles Java for each new query plan (Janino, then HotSpot's JIT on the
# other core), a cost every one of the suite's small queries pays: tests/pull and tests/groups
# took 257 s with it and 226 s without (440 and 372 CPU-s, one sitting). So the
# shared session runs Spark's interpreted expressions, as rocketfilter's own Spark pulls do
# (pull/scan.py SMALL_QUERY_CONF), and the tests that hold the selector's Columns to RocketMQ's
# answers (rows_by_ansi_mode: the conformance cases, the size and depth limits, the long
# chains) run on generated code, as bulk jobs do; the conformance cases under Spark's default
# ANSI mode on both engines. The other JVMs the suite starts (cluster, docs, notebooks, jobs)
# keep Spark's generated code.
ENGINES = {
    "interpreted": {"spark.sql.codegen.factoryMode": "NO_CODEGEN", "spark.sql.codegen.wholeStage": "false"},
    "generated": {"spark.sql.codegen.factoryMode": "FALLBACK", "spark.sql.codegen.wholeStage": "true"},
}


@contextmanager
def spark_engine(spark, engine: str):
    """Run the enclosed queries on ``engine`` ("interpreted" or "generated"), then restore."""
    from rocketfilter.spark_mode import restore_conf, set_conf

    previous = set_conf(spark, ENGINES[engine])
    try:
        yield
    finally:
        restore_conf(spark, previous)


@pytest.fixture(scope="session")
def spark():
    """One local[2] session for the whole suite: 2 shuffle partitions, no UI, no adaptive
    execution, 2g driver, interpreted expressions (:data:`ENGINES`)."""
    from pyspark.sql import SparkSession

    from rocketfilter.session import get_spark

    # With S3 tests collected, hadoop-aws goes on the one session's classpath from the start.
    store = "s3://tests" if _S3_TESTS_COLLECTED else None
    # The Python workers (so the sink's put processes) get the short-lived JVMs' options.
    builder = (SparkSession.builder.appName("rocketfilter-tests")
               .config("spark.executorEnv.SPARK_SUBMIT_OPTS", os.environ["SPARK_SUBMIT_OPTS"]))
    for key, value in ENGINES["interpreted"].items():
        builder = builder.config(key, value)
    with pytest.MonkeyPatch.context() as env:   # its own JVM starts with the caller's options
        env.setenv("SPARK_SUBMIT_OPTS", _SUBMIT_OPTS)
        session = get_spark(builder, testing=True, store=store)
    yield session
    session.stop()


# --- Spark Connect ----------------------------------------------------------------------------
# pyspark refuses to start a Connect session next to a classic one ([SESSION_ALREADY_EXIST]),
# and the suite shares one classic session. So the Connect server runs inside that session's
# JVM, and tests reach it through a Connect client: the same code path as a remote cluster.
# pyspark.sql.functions builds Connect Columns only while SPARK_CONNECT_MODE_ENABLED is set
# (pyspark.sql.utils.is_remote), process-wide: connect_spark sets it for one test at a time.

_S3_TESTS_COLLECTED = False


def pytest_collection_modifyitems(items) -> None:
    """Every test on a Connect session carries the ``connect`` marker (``-m "not connect"``).
    Notes whether tests of tests/s3 run (the shared session then needs hadoop-aws)."""
    global _S3_TESTS_COLLECTED
    _S3_TESTS_COLLECTED = any(Path(str(item.fspath)).parent.name == "s3" for item in items)
    for item in items:
        if "connect_spark" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.connect)


@pytest.fixture(scope="session")
def connect_server(spark):
    """A Spark Connect server in the suite's JVM, on a free port; yields its ``sc://`` URL."""
    pytest.importorskip("grpc", reason="the Spark Connect client needs pip install -e '.[connect]'")
    jvm, context = spark._jvm, spark._jsc.sc()
    # Port 0: the OS picks a free port, read back after the start. (The context's own SparkConf,
    # which the service reads; py4j cannot reflect SparkEnv, whose methods name unshaded protobuf.)
    context.conf().set("spark.connect.grpc.binding.port", "0")
    service = jvm.org.apache.spark.sql.connect.service.SparkConnectService
    service.start(context)
    port = getattr(getattr(jvm.org.apache.spark.sql.connect.service, "SparkConnectService$"), "MODULE$").localPort()
    yield f"sc://localhost:{port}"
    service.stop(getattr(service, "stop$default$1")(), getattr(service, "stop$default$2")())


@pytest.fixture(scope="session")
def _connect_session(connect_server):
    from pyspark.sql.connect.session import SparkSession as RemoteSparkSession

    session = RemoteSparkSession.builder.remote(connect_server).getOrCreate()
    yield session
    session.stop()


@pytest.fixture
def connect_spark(_connect_session, monkeypatch):
    """The suite's Spark Connect session, with pyspark in Connect mode for this test only
    (``SPARK_CONNECT_MODE_ENABLED`` is restored afterwards, whatever the test did)."""
    monkeypatch.setenv("SPARK_CONNECT_MODE_ENABLED", "1")
    return _connect_session


# --- a small store for the commands' tests ----------------------------------------------------

ORDERS = "Orders"


def orders_messages() -> list:
    """12 messages over 3 queues (message i: queue i % 3, offset i // 3). ``amount`` cycles
    19.99/150/250.5/80, ``region`` eu/us; message 10 (queue 1 offset 3) has no keys."""
    return [{"topic": ORDERS, "tags": ["TagA", "TagB"][i % 2], "keys": None if i == 10 else f"order-{i}",
             "properties": {"amount": ["19.99", "150", "250.5", "80"][i % 4], "region": ["eu", "us"][i % 2]},
             "body": f"order {i}"} for i in range(12)]


@pytest.fixture(scope="session")
def orders_store(spark, tmp_path_factory) -> str:
    """The URI of a store holding :func:`orders_messages` in topic ``Orders`` and an empty topic
    ``Empty``. Tests that commit offsets use groups of their own."""
    from rocketfilter.store import MessageStore

    uri = str(tmp_path_factory.mktemp("orders") / "store")
    store = MessageStore.open(uri, spark)
    store.create_topic(ORDERS, read_queue_nums=3, write_queue_nums=3)
    store.create_topic("Empty", read_queue_nums=2, write_queue_nums=2)
    store.put_messages(orders_messages())
    return uri


def pytest_sessionfinish() -> None:
    """The sink's warm put servers would idle for two minutes after the suite: stop them."""
    from rocketfilter.source.put_server import stop_servers

    stop_servers()
