"""The rocketfilter command as a whole: its commands come from the job modules, usage and bad
input end in one line with exit 2 (1 for a missing store), and none of that starts Spark.

Bad input is checked in this process with Spark's start-up replaced by a failure, and once in a
fresh process, where no JVM may have been launched afterwards. The commands' work on a store is
in the per-command files (test_replay_job.py, test_pull_job.py, test_offsets_job.py,
test_lint_job.py, test_demo.py, tests/store/test_importer.py).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from rocketfilter import cli
from rocketfilter.cli import COMMANDS, build_parser, guarded, main
from rocketfilter.jobs import common

REPO = Path(__file__).resolve().parents[1]


def _one_error_line(stderr: str, prog: str) -> str:
    assert "Traceback" not in stderr, stderr
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"{prog}: error: "), stderr
    return lines[0]


@pytest.fixture
def no_spark(monkeypatch):
    """Spark's start-up fails the test: whatever is checked must be checked before it."""
    def refuse(*args, **kwargs):
        raise AssertionError("Spark was started before the input was checked")
    monkeypatch.setattr(common, "start_spark", refuse)


@pytest.fixture(scope="module")
def a_store(tmp_path_factory) -> str:
    """A store with one topic and no messages, made without Spark (the tables are Delta-rs)."""
    from rocketfilter.config import MessageStoreConfig
    from rocketfilter.store.tables import StoreTables
    from rocketfilter.store.topics import create_topic

    uri = str(tmp_path_factory.mktemp("cli") / "store")
    create_topic(StoreTables(uri, None, MessageStoreConfig()), "OrderEvents", 2, 2)
    return uri


def test_version(capsys):
    assert main(["--version"]) == 0
    assert capsys.readouterr().out.startswith("rocketfilter ")


def test_help_lists_every_command(capsys):
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    for name in ("demo", "import", "replay", "pull", "offsets", "lint", "groups", "why", "promote", "backfill"):
        assert f"\n    {name} " in out, out


def test_no_command_prints_help_and_exits_2(capsys):
    assert main([]) == 2
    assert "replay" in capsys.readouterr().err


def test_commands_are_modules_with_register_and_main():
    """Adding a command is adding its module to COMMANDS: each registers itself and runs alone."""
    import importlib

    for name in COMMANDS:
        module = importlib.import_module(f"rocketfilter.jobs.{name}")
        assert callable(module.register) and callable(module.main), name
    parser = build_parser(commands=("lint",))
    args = parser.parse_args(["lint", "a = 1"])
    assert args.handler.__module__ == "rocketfilter.jobs.lint"
    with pytest.raises(SystemExit):
        parser.parse_args(["replay", "--store", "x", "--topic", "T"])  # not registered here


def test_guarded_exit_codes(capsys):
    def fail(exc):
        def action():
            raise exc
        return action

    assert guarded("rf", fail(ValueError("bad selector\nsecond line"))) == 2
    assert capsys.readouterr().err == "rf: error: ValueError: bad selector\n"
    assert guarded("rf", fail(RuntimeError("disk gone"))) == 1
    assert capsys.readouterr().err == "rf: error: RuntimeError: disk gone\n"
    assert guarded("rf", lambda: 0) == 0
    assert cli.guarded is common.guarded


BAD_INPUT = [
    # (argv, exit code, prog, fragment of the one error line)
    (["nonsense"], 2, "rocketfilter", "invalid choice"),
    (["demo", "--selector", "a >"], 2, "rocketfilter demo", "SelectorSyntaxError"),
    (["demo", "--tags", "||"], 2, "rocketfilter demo", "subString split error"),
    (["demo", "--conf", "spark.rocketfilter.brokerRole=BOSS"], 2, "rocketfilter demo", "brokerRole"),
    (["demo", "--master", "local[1]", "--remote", "sc://x:1"], 2, "rocketfilter demo", "not allowed with"),
    (["replay", "--store", "{store}", "--topic", "OrderEvents", "--max-msg-nums", "0"], 2, "rocketfilter replay",
     "max_msg_nums must be an integer from 1 to 2147483647, got 0"),
    (["replay", "--store", "{store}", "--topic", "../etc"], 2, "rocketfilter replay", "illegal characters"),
    (["replay", "--store", "{store}", "--topic", "OrderEvents", "--group", "a b"], 2, "rocketfilter replay",
     "The specified group: 'a b'"),
    (["replay", "--store", "{store}", "--topic", "OrderEvents", "--sql", "a >"], 2, "rocketfilter replay",
     "SelectorSyntaxError"),
    (["replay", "--store", "{store}", "--topic", "OrderEvents", "--sql", "a = 1 AN b = 2", "--strict"], 2,
     "rocketfilter replay", "Encountered 'AN' after a complete selector"),
    (["replay", "--store", "{store}", "--topic", "NoSuchTopic"], 2, "rocketfilter replay",
     "topic 'NoSuchTopic' does not exist"),
    (["replay", "--store", "{store}", "--topic", "OrderEvents", "--conf", "spark.rocketfilter.nope=1"], 2,
     "rocketfilter replay", "unknown setting 'nope'"),
    (["replay", "--store", "{store}", "--topic", "OrderEvents", "--conf", "nokey"], 2, "rocketfilter replay",
     "expected key=value"),
    (["replay", "--store", "{missing}", "--topic", "OrderEvents"], 1, "rocketfilter replay", "no rocketfilter store at"),
    (["pull", "--store", "{store}", "--topic", "OrderEvents"], 2, "rocketfilter pull", "the following arguments are required: --group"),
    (["pull", "--store", "{store}", "--topic", "OrderEvents", "--group", "G", "--queue", "2"], 2,
     "rocketfilter pull", "queue 2 is out of range"),
    (["pull", "--store", "{store}", "--topic", "OrderEvents", "--group", "G", "--offset", "-1"], 2,
     "rocketfilter pull", "offset must be an integer >= 0, got -1"),
    (["pull", "--store", "{store}", "--topic", "OrderEvents", "--group", "G", "--pulls", "0"], 2,
     "rocketfilter pull", "pulls must be at least 1"),
    (["pull", "--store", "{missing}", "--topic", "OrderEvents", "--group", "G"], 1, "rocketfilter pull",
     "no rocketfilter store at"),
    (["import", "--store", "{missing}", "--source", "{missing}"], 1, "rocketfilter import", "no commitlog directory"),
    (["offsets", "show", "--store", "{store}"], 2, "rocketfilter offsets show", "the following arguments are required: --group"),
    (["offsets", "reset", "--store", "{store}", "--group", "G", "--topic", "OrderEvents"], 2,
     "rocketfilter offsets reset", "one of the arguments --to-offset --to-earliest --to-latest --to-time is required"),
    (["offsets", "reset", "--store", "{store}", "--group", "G", "--topic", "OrderEvents", "--to-offset", "-3"], 2,
     "rocketfilter offsets reset", "offset must be an integer >= 0, got -3"),
    (["lint"], 2, "rocketfilter lint", "the following arguments are required: selector"),
    (["lint", "a = 1", "--store", "{store}"], 2, "rocketfilter lint", "--store and --topic go together"),
]


@pytest.mark.parametrize("argv, code, prog, fragment", BAD_INPUT, ids=[" ".join(c[0][:3]) + f" #{i}"
                                                                         for i, c in enumerate(BAD_INPUT)])
def test_bad_input_is_one_line_and_starts_no_spark(argv, code, prog, fragment, a_store, tmp_path, no_spark, capsys):
    argv = [a.format(store=a_store, missing=str(tmp_path / "missing")) for a in argv]
    assert main(argv) == code
    out, err = capsys.readouterr()
    assert fragment in _one_error_line(err, prog) and out == ""
    assert not (tmp_path / "missing").exists()  # no store was created at a mistyped path


@pytest.mark.parametrize("script, argv, fragment", [
    ("demo.py", ["--bogus"], "unrecognized arguments"),
    ("replay.py", ["--store", "{missing}", "--topic", "T"], "no rocketfilter store at"),
    ("pull.py", ["--store", "{store}", "--topic", "OrderEvents", "--group", "G", "--sql", "a = 'x"], "SelectorSyntaxError"),
    ("import_store.py", ["--store", "{missing}"], "the following arguments are required: --source"),
])
def test_the_spark_jobs_scripts_are_the_same_commands(script, argv, fragment, a_store, tmp_path, no_spark, capsys):
    import importlib.util

    spec = importlib.util.spec_from_file_location(f"script_{script[:-3]}", REPO / "spark_jobs" / script)
    job = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(job)
    argv = [a.format(store=a_store, missing=str(tmp_path / "missing")) for a in argv]
    assert job.main(argv) in (1, 2)
    assert fragment in _one_error_line(capsys.readouterr().err, script)


def test_a_fresh_process_rejects_bad_input_without_starting_a_jvm(a_store, tmp_path):
    """One process, every kind of bad input: each fails with its line, and afterwards pyspark has
    launched no JVM gateway (the checks really come first, not only when Spark is mocked)."""
    cases = [[a.format(store=a_store, missing=str(tmp_path / "missing")) for a in argv]
             for argv, *_ in BAD_INPUT if argv[0] in ("replay", "pull", "import", "demo")]
    script = (
        "import json, sys\n"
        "from rocketfilter.cli import main\n"
        "codes = [main(argv) for argv in json.loads(sys.argv[1])]\n"
        "from pyspark import SparkContext\n"
        "print(json.dumps({'codes': codes, 'jvm': SparkContext._gateway is not None}))\n")
    env = {k: v for k, v in os.environ.items() if k not in ("SPARK_REMOTE", "PYSPARK_GATEWAY_PORT")}
    env["PYTHONPATH"] = str(REPO)
    done = subprocess.run([sys.executable, "-c", script, json.dumps(cases)], cwd=REPO, env=env,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    expected = [code for argv, code, *_ in BAD_INPUT if argv[0] in ("replay", "pull", "import", "demo")]
    assert result == {"codes": expected, "jvm": False}
    errors = [line for line in done.stderr.splitlines() if ": error: " in line]
    assert len(errors) == len(cases) and "Traceback" not in done.stderr


def test_remote_gives_a_spark_connect_session_with_the_conf(connect_spark, connect_server):
    import argparse

    from rocketfilter.spark_mode import is_connect

    args = argparse.Namespace(remote=connect_server, master=None, verbose=False,
                              conf=[("spark.rocketfilter.brokerName", "cli-remote")])
    session = common.start_spark(args, "rocketfilter-test")
    try:
        assert is_connect(session) and session is connect_spark
        assert session.conf.get("spark.rocketfilter.brokerName") == "cli-remote"
    finally:
        session.conf.unset("spark.rocketfilter.brokerName")


def test_the_command_line_is_built_without_pyspark():
    """`rocketfilter --help` and `rocketfilter lint` stay quick: building the parser imports no
    pyspark (the jobs import it when they run)."""
    done = subprocess.run([sys.executable, "-c", "import sys; from rocketfilter.cli import build_parser; "
                           "build_parser(); print(any(m.startswith('pyspark') for m in sys.modules))"],
                          cwd=REPO, env=dict(os.environ, PYTHONPATH=str(REPO)), capture_output=True, text=True)
    assert done.stdout.strip() == "False", done.stderr


@pytest.mark.parametrize("argv, says", [
    (["groups", "diagnose", "--store", "/nonexistent/rf", "--group", "GID_x"], "no rocketfilter store at /nonexistent/rf"),
    (["groups", "replay", "--store", "/nonexistent/rf", "--group", "GID_x"], "the following arguments are required: --topic"),
    (["promote", "--store", "/nonexistent/rf", "--properties", ","], "names no property"),
    (["promote", "--store", "/nonexistent/rf", "--properties", "age"], "no rocketfilter store at /nonexistent/rf"),
    (["backfill", "--store", "/nonexistent/rf", "--topic", "bad topic!"], "--topic"),
])
def test_group_and_maintenance_commands_check_before_spark(argv, says, capsys, monkeypatch):
    from rocketfilter.jobs import common

    monkeypatch.setattr(common, "start_spark", lambda *a, **k: pytest.fail("Spark started before the checks"))
    code = main(argv)
    err = capsys.readouterr().err
    assert code in (1, 2) and says in err and "Traceback" not in err and len(err.strip().splitlines()) == 1, err


def test_commands_run_with_the_session_hooks_suspended(monkeypatch):
    """No command reads through the rocketmq source, so a session a command starts does not
    register it (Spark's Python data-source lookup would cost 3 to 5 s of every run)."""
    from rocketfilter import hooks

    seen = []
    monkeypatch.setattr(hooks, "_SESSION_HOOKS", [seen.append])
    monkeypatch.setattr(cli, "build_parser", lambda prog: _HookProbe())
    assert main(["probe"]) == 0
    assert seen == []
    hooks.run_session_hooks("after")
    assert seen == ["after"]


class _HookProbe:
    """A parser whose one command runs the session hooks, as get_spark would."""

    def parse_args(self, argv):
        from argparse import Namespace

        from rocketfilter import hooks

        return Namespace(command="probe", handler=lambda args, spark: hooks.run_session_hooks("during") or 0)
