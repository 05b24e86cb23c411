"""The rocketfilter command and spark_jobs/demo.py: usage and bad input end in one line, no
traceback. These cases fail before any Spark session starts."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from rocketfilter.cli import guarded, main

REPO = Path(__file__).resolve().parents[1]


def _run(*args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    return subprocess.run([sys.executable, *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=300)


def _one_error_line(stderr: str, prog: str) -> str:
    assert "Traceback" not in stderr, stderr
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"{prog}: error: "), stderr
    return lines[0]


def test_version():
    done = _run("-m", "rocketfilter.cli", "--version")
    assert done.returncode == 0 and done.stdout.startswith("rocketfilter "), done


@pytest.mark.parametrize(
    "args, prog, fragment",
    [
        (["-m", "rocketfilter.cli", "demo", "--selector", "a >"], "rocketfilter", "SelectorSyntaxError"),
        (["-m", "rocketfilter.cli", "demo", "--tags", "||"], "rocketfilter", "subString split error"),
        (["-m", "rocketfilter.cli", "nonsense"], "rocketfilter", "invalid choice"),
        (["spark_jobs/demo.py", "--bogus"], "demo.py", "unrecognized arguments"),
        (["spark_jobs/demo.py", "--selector", "a = \"x\""], "demo.py", "SelectorSyntaxError"),
    ],
)
def test_bad_input_exits_2_with_one_line(args, prog, fragment):
    done = _run(*args)
    assert done.returncode == 2, done
    assert fragment in _one_error_line(done.stderr, prog)


def test_no_command_prints_help_and_exits_2(capsys):
    assert main([]) == 2
    assert "demo" in capsys.readouterr().err


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
