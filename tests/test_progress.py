"""Progress lines: formatting, terminal and non-terminal behaviour (fake clock and stream), and
progress read from real Spark jobs, classic and Spark Connect."""
from __future__ import annotations

import io
import re

import pytest

from rocketfilter.progress import Progress, format_duration, format_rate
from rocketfilter.spark_progress import _ConnectHandler, _JobGroupPoller, spark_progress, units_done


class Clock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 100.0  # any origin: only differences count

    def __call__(self) -> float:
        return self.now

    def at(self, seconds: float) -> None:
        self.now = 100.0 + seconds


def _progress(tty: bool, total=40, unit="files", **kwargs):
    clock, out = Clock(), io.StringIO()
    return Progress("import", total=total, unit=unit, stream=out, tty=tty, clock=clock, **kwargs), clock, out


def test_format_duration_and_rate():
    assert [format_duration(s) for s in (0, 9, 101, 3723, 9.6)] == ["0:00", "0:09", "1:41", "1:02:03", "0:10"]
    assert format_rate(3.2, "files") == "3.2 files/s"
    assert format_rate(1234.4, "messages") == "1,234 messages/s"


def test_not_a_terminal_prints_only_the_summary():
    p, clock, out = _progress(tty=False)
    clock.at(3)
    p.update(12)
    clock.at(5)
    p.advance(8)
    assert out.getvalue() == ""  # nothing while running
    clock.at(12)
    p.update(40)
    p.close()
    assert out.getvalue() == "import: 40 files in 0:12 (3.3 files/s)\n"
    p.close()  # closing twice writes nothing more
    assert out.getvalue().count("\n") == 1


def test_quick_work_is_silent_anywhere():
    for tty in (False, True):
        p, clock, out = _progress(tty=tty, delay=2.0)
        clock.at(1.5)
        p.update(40)
        p.close()
        assert out.getvalue() == ""


ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def _screen(out) -> list:
    """The texts drawn, without the terminal's control codes and rich's bar glyphs."""
    text = ANSI.sub("", out.getvalue()).replace("\r", "\n")
    return [re.sub(r"[━╸╺ ]{2,}", " ", line).strip() for line in text.split("\n") if line.strip()]


def test_terminal_redraws_in_place_then_the_summary():
    p, clock, out = _progress(tty=True, interval=0.25, ticker=False)
    clock.at(1)
    p.update(4)  # before the delay: nothing yet
    assert out.getvalue() == ""
    clock.at(3)
    p.update(12)
    assert _screen(out) == ["import: 12/40 files (30%) 4.0 files/s ETA 0:07"]
    clock.at(3.1)
    p.update(13)  # within the interval: not redrawn
    assert _screen(out) == ["import: 12/40 files (30%) 4.0 files/s ETA 0:07"]
    clock.at(4)
    p.update(20)
    assert _screen(out)[-1] == "import: 20/40 files (50%) 5.0 files/s ETA 0:04"
    clock.at(10)
    p.update(40)
    assert _screen(out)[-1] == "import: 40 files done, 0:10 elapsed"   # never "100%" on screen
    p.close()
    assert _screen(out)[-1] == "import: 40 files in 0:10 (4.0 files/s)"
    assert out.getvalue().endswith("import: 40 files in 0:10 (4.0 files/s)\n")  # the live lines removed


def test_an_unchanged_line_is_not_redrawn():
    p, clock, out = _progress(tty=True, total=None, unit="messages", ticker=False)
    clock.at(3)
    p.update(0)
    p.tick()
    drawn = out.getvalue()
    clock.at(4)
    p.tick()
    assert out.getvalue() == drawn and _screen(out) == ["import: 0 messages"]


def test_without_a_total():
    p, clock, out = _progress(tty=True, total=None, unit="messages", ticker=False)
    clock.at(3)
    p.update(120)
    assert _screen(out) == ["import: 120 messages 40.0 messages/s"]


def test_phases_show_what_is_done_and_never_a_premature_100_percent():
    updates = []
    clock, out = Clock(), io.StringIO()
    p = Progress("import", phase="starting Spark", stream=out, tty=True, clock=clock, ticker=False,
                 listener=updates.append)
    clock.at(3)
    p.tick()
    assert _screen(out)[-1] == "import: starting Spark 0:03 elapsed"
    p.set_phase("reading", total=40, unit="files")
    clock.at(4)
    p.update(12)
    assert _screen(out)[-1] == "import: reading 12/40 files (30%) 12.0 files/s ETA 0:02"
    clock.at(5)
    p.update(40)
    p.set_phase("writing")
    clock.at(9)
    p.tick()
    assert _screen(out)[-1] == "import: writing 40 files done, 0:09 elapsed"
    p.set_phase("committing")
    clock.at(12)
    p.close()
    assert _screen(out)[-1] == "import: 40 files in 0:12 (3.3 files/s)"
    assert p.phases == ["starting Spark", "reading", "writing", "committing"]
    assert [(u.phase, u.done, u.final) for u in updates] == [
        ("starting Spark", 0, False), ("reading", 0, False), ("reading", 12, False), ("reading", 40, False),
        ("writing", 40, False), ("committing", 40, False), ("committing", 40, True)]


def test_a_failure_names_its_phase():
    p, clock, out = _progress(tty=False, phase="reading")
    clock.at(5)
    p.update(12)
    p.close(failed=True)
    assert out.getvalue() == "import: stopped at 12/40 files after 0:05 (reading)\n"


def test_the_ticker_redraws_while_nothing_reports():
    out = io.StringIO()
    ticks = []
    p = Progress("import", phase="starting Spark", stream=out, tty=True, delay=0, interval=0.01)
    real = p.tick
    p.tick = lambda: (ticks.append(1), real())[1]
    import threading
    waited = threading.Event()
    while len(ticks) < 3 and not waited.wait(0.01):
        pass
    p.close()
    assert len(ticks) >= 3 and "import: starting Spark" in "\n".join(_screen(out))


def test_failure_says_where_it_stopped():
    p, clock, out = _progress(tty=False)
    with pytest.raises(RuntimeError):
        with p:
            clock.at(5)
            p.update(12)
            raise RuntimeError("disk gone")
    assert out.getvalue() == "import: stopped at 12/40 files after 0:05\n"


def test_a_summary_short_of_the_total_shows_both():
    p, clock, out = _progress(tty=False)
    clock.at(4)
    p.update(38)
    p.close()
    assert out.getvalue() == "import: 38/40 files in 0:04 (9.5 files/s)\n"


def test_a_broken_stream_never_fails_the_work():
    class Broken(io.StringIO):
        def write(self, text):
            raise OSError("pipe closed")

    clock = Clock()
    p = Progress("import", total=4, stream=Broken(), tty=True, clock=clock)
    clock.at(5)
    p.update(2)
    p.close()  # no exception, and nothing more is attempted
    assert p.closed


def test_units_done_maps_tasks_to_units():
    assert units_done([], None, None) == (0, None)
    assert units_done([(4, 1), (2, 2)], None, None) == (3, 6)
    assert units_done([(4, 1), (2, 2)], None, 60) == (30, 60)
    assert units_done([(8, 2), (1, 0)], 8, 40) == (10, 40)  # only the 8-task stage counts
    assert units_done([(8, 9)], 8, 40) == (40, 40)  # speculative duplicates never exceed


def test_connect_handler_counts_stages_per_operation():
    class Stage:
        def __init__(self, stage_id, num_tasks, num_completed_tasks):
            self.stage_id, self.num_tasks, self.num_completed_tasks = stage_id, num_tasks, num_completed_tasks

    class Session:
        def registerProgressHandler(self, handler):
            self.handler = handler

        def removeProgressHandler(self, handler):
            self.handler = None

    session, (p, clock, out) = Session(), _progress(tty=False, total=None, unit="tasks")
    handler = _ConnectHandler(session, p, tasks=None, total=None)
    assert session.handler is handler
    handler(stages=[Stage(0, 4, 1)], inflight_tasks=3, operation_id="a", done=False)
    handler(stages=[Stage(0, 4, 4), Stage(1, 2, 0)], inflight_tasks=2, operation_id="a", done=False)
    handler(stages=[Stage(1, 5, 0)], inflight_tasks=0, operation_id="b", done=False)
    handler(stages=[Stage(0, 3, 3), Stage(1, 5, 0)], inflight_tasks=0, operation_id="b", done=True)
    handler(stages=[object()], operation_id="c")  # nonsense is ignored, never raised
    assert (p.done, p.total) == (7, 9)  # b's stage 1 was skipped: it left the count at the end
    handler.stop()
    assert session.handler is None


def _drain_listener_bus(spark) -> None:
    """The status tracker hears of finished tasks through Spark's asynchronous listener bus."""
    spark._jsc.sc().listenerBus().waitUntilEmpty(600_000)


def test_job_group_poller_reads_completed_tasks(spark):
    p, clock, out = _progress(tty=False, total=None, unit="tasks")
    sc = spark.sparkContext
    sc.setJobGroup("callers-group", "the caller's description")
    try:
        poller = _JobGroupPoller(spark, p, tasks=3, total=None, label="count", interval=3600)
        spark.range(0, 30, 1, 3).selectExpr("sum(id)").collect()
        _drain_listener_bus(spark)
        poller.poll()
        assert poller.stages and all(n == c for n, c in poller.stages.values())
        assert (p.done, p.total) == (2, 3)  # the 3-task stage is done, the block is not: one short
        poller.stop()
        assert sc.getLocalProperty("spark.jobGroup.id") == "callers-group"  # restored
    finally:
        sc.setLocalProperty("spark.jobGroup.id", None)
        sc.setLocalProperty("spark.job.description", None)


def test_spark_progress_summary_in_the_callers_units(spark):
    clock, out = Clock(), io.StringIO()
    with spark_progress(spark, "import", unit="files", total=30, tasks=3, stream=out, tty=False,
                        clock=clock, delay=0) as p:
        spark.range(0, 30, 1, 3).selectExpr("count(id)").collect()
        clock.at(6)
    assert (p.done, p.total) == (30, 30)
    assert out.getvalue() == "import: 30 files in 0:06 (5.0 files/s)\n"
    assert spark.sparkContext.getLocalProperty("spark.jobGroup.id") is None


def test_spark_progress_counts_the_work_done_when_the_caller_moved_on_before_the_tracker_saw_it(spark):
    # The tracker hears of tasks late (an asynchronous listener bus): here it never does, and
    # the caller has already moved on to committing when the block ends.
    clock, out = Clock(), io.StringIO()
    with spark_progress(spark, "import", unit="files", total=30, tasks=3, phase="reading",
                        after="writing", stream=out, tty=False, clock=clock, delay=0,
                        poll_interval=3600) as p:
        p.set_phase("committing")
        clock.at(6)
    assert out.getvalue() == "import: 30 files in 0:06 (5.0 files/s)\n"


def test_spark_progress_failure_is_reported_and_raised(spark):
    clock, out = Clock(), io.StringIO()
    with pytest.raises(ZeroDivisionError):
        with spark_progress(spark, "import", unit="files", total=10, stream=out, tty=False,
                            clock=clock, delay=0):
            clock.at(1)
            1 / 0
    assert out.getvalue() == "import: stopped at 0/10 files after 0:01\n"


def test_spark_progress_without_a_tracker_still_runs_the_work():
    class NoSpark:
        @property
        def sparkContext(self):
            raise RuntimeError("stopped")

    out = io.StringIO()
    with spark_progress(NoSpark(), "import", total=2, stream=out, tty=False, delay=0) as p:
        p.update(1)
    assert out.getvalue().startswith("import: 2 tasks in 0:00")


def test_spark_progress_on_spark_connect(connect_spark, monkeypatch):
    calls = []
    original = _ConnectHandler.__call__
    monkeypatch.setattr(_ConnectHandler, "__call__",
                        lambda self, **kw: (calls.append(kw), original(self, **kw))[1])
    out = io.StringIO()
    with spark_progress(connect_spark, "count", stream=out, tty=False, delay=0) as p:
        connect_spark.range(0, 40, 1, 4).selectExpr("sum(id)").collect()
    # The client calls the registered handler at least once, when the query is done; the server
    # reports stages only every spark.connect.progress.reportInterval, so a quick query may end
    # before any report (then there is no total to show, and that is not a failure).
    assert calls and calls[-1]["done"] is True
    if p.total is not None:
        assert p.total >= 4 and p.done == p.total
        assert out.getvalue().startswith(f"count: {p.total} tasks in ")
    else:
        assert out.getvalue().startswith("count: ")
    # The handler is gone after the block: a later query reaches no handler of ours.
    seen = len(calls)
    connect_spark.range(1).collect()
    assert len(calls) == seen
    assert not any(isinstance(h, _ConnectHandler) for h in connect_spark._client._progress_handlers)
