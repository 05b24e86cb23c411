"""Issue 19.3: every error names its cause. The one error line carries the innermost cause (a
gRPC status and detail, a Java exception's message), ``--verbose`` the whole chain; a real Spark
Connect failure (a gRPC server that refuses every call, as one that wants a token does) in one
subprocess. Also: stored group names are checked before Spark, every ``--help`` starts with a
whole sentence without markup, and a command's errors name it as its usage errors do."""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
from concurrent import futures
from pathlib import Path

import pytest

from rocketfilter.cli import build_parser, main
from rocketfilter.jobs import common
from rocketfilter.jobs.errors import chain, error_line

REPO = Path(__file__).resolve().parents[1]

RPC_TEXT = ('<_InactiveRpcError of RPC that terminated with:\n'
            '\tstatus = StatusCode.UNAUTHENTICATED\n'
            '\tdetails = "No authentication token provided"\n'
            '\tdebug_error_string = "UNKNOWN:Error received from peer  {grpc_status:16}"\n>')
PY4J_TEXT = ("An error occurred while calling o58.load.\n"
             ": org.apache.spark.SparkException: Job aborted due to stage failure: Task 0 failed\n"
             "\tat org.apache.spark.scheduler.DAGScheduler.failJobAndIndependentStages(DAGScheduler.scala:2856)\n"
             "Caused by: java.io.FileNotFoundException: /data/rf/commitlog/part-0001.parquet (No such file)\n"
             "\tat java.io.FileInputStream.open0(Native Method)\n")


class FakeRpcError(Exception):
    """What grpc raises: an exception that is also a Call with code() and details()."""

    def code(self):
        return "StatusCode.UNAUTHENTICATED"

    def details(self):
        return "No authentication token provided"


class SparkConnectGrpcException(Exception):
    pass


class Py4JJavaError(Exception):
    pass


def _raise(exc, cause=None, suppress=False):
    def action():
        try:
            if cause is not None:
                raise cause
        except Exception:  # noqa: BLE001 - becomes the context
            if suppress:
                raise exc from None
            raise exc
        raise exc
    return action


def test_the_line_carries_the_grpc_status_and_detail(capsys):
    # pyspark: raise SparkConnectGrpcException(str(rpc_error)) from None; the call is the context
    wrapped = _raise(SparkConnectGrpcException(RPC_TEXT), FakeRpcError(RPC_TEXT), suppress=True)
    assert common.guarded("rocketfilter replay", wrapped) == 1
    err = capsys.readouterr().err
    assert err == ('rocketfilter replay: error: SparkConnectGrpcException: StatusCode.UNAUTHENTICATED: '
                   '"No authentication token provided"\n')
    # The same from the text alone (no context to look at)
    assert error_line(SparkConnectGrpcException(RPC_TEXT)) == \
        'SparkConnectGrpcException: StatusCode.UNAUTHENTICATED: "No authentication token provided"'


def test_the_line_carries_the_innermost_java_exception():
    line = error_line(Py4JJavaError(PY4J_TEXT))
    assert line == ("Py4JJavaError: java.io.FileNotFoundException: /data/rf/commitlog/part-0001.parquet "
                    "(No such file)")
    assert error_line(Py4JJavaError(PY4J_TEXT.split("Caused by")[0])) == \
        "Py4JJavaError: org.apache.spark.SparkException: Job aborted due to stage failure: Task 0 failed"


def test_a_python_chain_names_its_innermost_exception(capsys):
    inner = OSError("[Errno 28] No space left on device")
    middle = RuntimeError("writing the commit log failed")
    try:
        try:
            raise inner
        except OSError as e:
            raise middle from e
    except RuntimeError as e:
        outer = e
    assert chain(outer) == [middle, inner]
    assert error_line(outer) == ("RuntimeError: writing the commit log failed; caused by OSError: "
                                 "[Errno 28] No space left on device")
    assert error_line(ValueError("plain")) == "ValueError: plain"   # nothing to add
    assert common.guarded("rf", _raise(ValueError("bad\nsecond line"))) == 2
    assert capsys.readouterr().err == "rf: error: ValueError: bad\n"


def test_verbose_shows_the_whole_chain_without_python_frames(capsys):
    action = _raise(SparkConnectGrpcException(RPC_TEXT), FakeRpcError(RPC_TEXT), suppress=True)
    assert common.guarded("rf", action, verbose=True) == 1
    err = capsys.readouterr().err
    lines = err.splitlines()
    assert lines[0].startswith("rf: error: SparkConnectGrpcException: StatusCode.UNAUTHENTICATED")
    assert "  SparkConnectGrpcException: <_InactiveRpcError of RPC that terminated with:" in lines
    assert any(line.startswith("  caused by: FakeRpcError: ") for line in lines)
    assert 'debug_error_string' in err and "Traceback" not in err and 'File "' not in err


@pytest.fixture
def refusing_server():
    """A gRPC server that refuses every call with UNAUTHENTICATED, as a Spark Connect server that
    wants a token does when none is sent; yields its sc:// URL."""
    grpc = pytest.importorskip("grpc", reason="the Spark Connect client needs pip install -e '.[connect]'")

    class Refuse(grpc.GenericRpcHandler):
        def service(self, handler_call_details):
            def refuse(request, context):
                context.abort(grpc.StatusCode.UNAUTHENTICATED, "No authentication token provided")
            return grpc.unary_unary_rpc_method_handler(refuse) if "Stream" not in handler_call_details.method \
                else grpc.unary_stream_rpc_method_handler(refuse)

    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2), handlers=[Refuse()])
    port = server.add_insecure_port("localhost:0")
    server.start()
    yield f"sc://localhost:{port}"
    server.stop(None)


def test_a_real_connect_failure_names_status_and_detail(refusing_server, tmp_path):
    from rocketfilter.config import MessageStoreConfig
    from rocketfilter.store.tables import StoreTables
    from rocketfilter.store.topics import create_topic

    uri = str(tmp_path / "store")
    create_topic(StoreTables(uri, None, MessageStoreConfig()), "OrderEvents", 1, 1)
    env = {k: v for k, v in os.environ.items() if k not in ("SPARK_REMOTE", "PYSPARK_GATEWAY_PORT")}
    env["PYTHONPATH"] = str(REPO)
    done = subprocess.run([sys.executable, "-m", "rocketfilter.cli", "replay", "--store", uri, "--topic",
                           "OrderEvents", "--remote", refusing_server], cwd=REPO, env=env, capture_output=True,
                          text=True)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    errors = [line for line in lines if ": error: " in line]
    assert len(errors) == 1, done.stderr
    assert errors[0].startswith("rocketfilter replay: error: ") and \
        'StatusCode.UNAUTHENTICATED: "No authentication token provided"' in errors[0], done.stderr


# --- checks before Spark, help texts, names in error lines ------------------------------------

@pytest.fixture(scope="module")
def a_store(tmp_path_factory) -> str:
    from rocketfilter.config import MessageStoreConfig
    from rocketfilter.consumer import ConsumerGroup
    from rocketfilter.store.groups import save_group
    from rocketfilter.store.tables import StoreTables
    from rocketfilter.store.topics import create_topic

    uri = str(tmp_path_factory.mktemp("errors") / "store")
    tables = StoreTables(uri, None, MessageStoreConfig())
    create_topic(tables, "OrderEvents", 2, 2)
    save_group(tables, ConsumerGroup("GID_known"))
    return uri


@pytest.fixture
def no_spark(monkeypatch):
    monkeypatch.setattr(common, "start_spark", lambda *a, **k: pytest.fail("Spark started before the checks"))


@pytest.mark.parametrize("argv, code, prog, says", [
    (["groups", "diagnose", "--store", "{store}", "--group", "NoSuchGroup"], 2, "rocketfilter groups diagnose",
     "no consumer group 'NoSuchGroup' in store"),
    (["groups", "replay", "--store", "{store}", "--group", "NoSuchGroup", "--topic", "OrderEvents"], 2,
     "rocketfilter groups replay", "(groups: GID_known)"),
    (["groups", "diagnose", "--store", "{store}", "--group", "GID_known", "--topic", "Nope"], 2,
     "rocketfilter groups diagnose", "topic 'Nope' does not exist"),
    (["why", "--store", "{store}", "--group", "NoSuchGroup", "--key", "k"], 2, "rocketfilter why",
     "no consumer group 'NoSuchGroup'"),
    (["why", "--store", "{store}", "--group", "GID_known", "--msg-id", "NOTANID"], 2, "rocketfilter why",
     "--msg-id 'NOTANID' is not a message id"),
    (["offsets", "reset", "--store", "{store}", "--group", "G", "--topic", "Nope", "--to-latest"], 2,
     "rocketfilter offsets reset", "topic 'Nope' does not exist"),
    (["offsets", "reset", "--store", "{store}", "--group", "G", "--topic", "OrderEvents", "--to-offset", "5"], 2,
     "rocketfilter offsets reset", "Target offset 5 not in consume queue range"),
    (["offsets", "show", "--store", "{store}", "--group", "G", "--topic", "Nope"], 2, "rocketfilter offsets show",
     "topic 'Nope' does not exist"),
])
def test_errors_before_spark_name_the_command(argv, code, prog, says, a_store, no_spark, capsys):
    assert main([a.format(store=a_store) for a in argv]) == code
    out, err = capsys.readouterr()
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"{prog}: error: ") and says in lines[0], err


def _parsers(parser: argparse.ArgumentParser):
    """Every parser under ``parser`` (commands and their subcommands), with its prog."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in dict.fromkeys(action.choices.values()):
                yield sub
                yield from _parsers(sub)


def test_every_help_starts_with_a_whole_sentence_without_markup():
    parsers = list(_parsers(build_parser()))
    assert len(parsers) >= 16
    for parser in parsers:
        text = parser.description or ""
        assert text and "``" not in text and ":func:" not in text and "\n" not in text, (parser.prog, text)
        assert text.endswith("."), (parser.prog, text)   # a sentence, not a line cut off
    helps = [a.help for p in [build_parser()] for a in p._actions if isinstance(a, argparse._SubParsersAction)
             for a in a._choices_actions]
    assert all(h and "``" not in h for h in helps)
    why = next(p for p in parsers if p.prog == "rocketfilter why")
    assert "4 NOT_FOUND" in why.epilog and "2 bad input (such as a malformed --msg-id)" in why.epilog


def test_a_spark_error_with_its_jvm_stack_is_not_said_twice():
    """pyspark's AnalysisException text: the message, then the JVM stack that repeats it."""
    class AnalysisException(Exception):
        pass

    text = ("[TABLE_OR_VIEW_NOT_FOUND] The table or view `t` cannot be found.\n\nJVM stacktrace:\n"
            "org.apache.spark.sql.AnalysisException: [TABLE_OR_VIEW_NOT_FOUND] The table or view `t` cannot be found.\n"
            "\tat org.apache.spark.sql.errors.QueryCompilationErrors$.tableNotFound(QueryCompilationErrors.scala:1)\n")
    assert error_line(AnalysisException(text)) == \
        "AnalysisException: [TABLE_OR_VIEW_NOT_FOUND] The table or view `t` cannot be found."

    class Unprintable(Exception):
        def __str__(self):
            raise RuntimeError("the JVM is gone")
    assert error_line(Unprintable("x")).startswith("Unprintable: ")


def test_a_real_py4j_failure_names_the_java_exception(spark, capsys):
    """A call into the JVM that throws: the line is the Java exception, not Py4J's call site."""
    missing = "/nonexistent-rocketfilter/commitlog.parquet"
    assert common.guarded("rf", lambda: spark._jvm.java.io.FileInputStream(missing)) == 1
    assert capsys.readouterr().err == \
        f"rf: error: Py4JJavaError: java.io.FileNotFoundException: {missing} (No such file or directory)\n"
