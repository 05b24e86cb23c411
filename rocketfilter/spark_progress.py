"""Progress of Spark actions, shown by a :class:`rocketfilter.progress.Progress`.

Spark counts tasks; the caller counts files or messages. :func:`spark_progress` watches the
tasks of the actions run inside its block and maps them to the caller's units:

* ``tasks=None`` (the default): every task of the block's stages counts. Without ``total`` the
  display is in tasks ("12/40 tasks"); with ``total`` it shows ``total * completed / tasks``.
* ``tasks=n``: only stages of exactly ``n`` tasks count: the stage that does the caller's work,
  when the caller made it ``n`` tasks (``spark.range(n, numPartitions=n).mapInArrow(...)``, as the
  importer does). Each task is worth ``total / n`` units, which is exact when a task is one unit
  and, for tasks holding near-equal runs of units, off by less than one task's share.

Stages Spark skips (a shuffle already computed, which adaptive execution makes common) never
complete a task; they leave the count once their job is known to have succeeded. When the block
ends without an error, the display ends at its total: all the work is done.

A classic session runs the block's actions under a job group of their own (the caller's group
is restored afterwards) and a daemon thread polls ``sparkContext.statusTracker()``. A Spark
Connect session has no SparkContext: a progress handler (``spark.registerProgressHandler``,
pyspark 4) receives the server's stage reports, which come every
``spark.connect.progress.reportInterval`` (2 s by default). Progress reporting never fails the
work: a tracker that errors stops updating the display, nothing more.
"""
from __future__ import annotations

import threading
import time
import uuid
from contextlib import contextmanager, nullcontext
from typing import Callable, ContextManager, Dict, Iterable, Iterator, Optional, TextIO, Tuple, Union

from rocketfilter.progress import DEFAULT_DELAY, Progress, Update
from rocketfilter.spark_mode import is_connect

_JOB_PROPERTIES = ("spark.jobGroup.id", "spark.job.description", "spark.job.interruptOnCancel")


def units_done(stages: Iterable[Tuple[int, int]], tasks: Optional[int],
               total: Optional[int]) -> Tuple[int, Optional[int]]:
    """``(done, total)`` in the caller's units from ``(num_tasks, completed_tasks)`` per stage.

    >>> units_done([(4, 1), (2, 2)], tasks=None, total=None)   # in tasks
    (3, 6)
    >>> units_done([(4, 1), (2, 2)], tasks=4, total=40)        # 1 of the 4 file tasks: 10 files
    (10, 40)
    """
    chosen = [(n, min(c, n)) for n, c in stages if tasks is None or n == tasks]
    all_tasks = sum(n for n, _ in chosen)
    completed = sum(c for _, c in chosen)
    if total is None:
        return completed, all_tasks or None
    return (total * completed // all_tasks if all_tasks else 0), total


class _Watcher:
    """Stage counts for one block, turned into Progress updates.

    The count never reaches its total while the block runs, unless ``tasks`` names the stage
    that does the counted work and it has finished: then the phase moves on to ``after`` (the
    block's work after that stage, such as writing), whose display shows no stale 100%.
    Without ``tasks``, stages not known yet may follow, so the count stops one short."""

    def __init__(self, progress: Progress, tasks: Optional[int], total: Optional[int],
                 after: Optional[str] = None) -> None:
        self.progress, self.tasks, self.total, self.after = progress, tasks, total, after
        self.stages: Dict[object, Tuple[int, int]] = {}
        self.finished = False   # the counted stage is done: the phase moved on
        self.completed = False  # this watcher brought the count to its total
        self.phase = progress.phase

    def report(self) -> None:
        if self.progress.phase != self.phase:
            self.finished = True   # the caller moved on (committing): the count is over
        if not self.finished:
            done, total = units_done(self.stages.values(), self.tasks, self.total)
            if total is not None and done >= total:
                if self.tasks is not None and self.after is not None:
                    self.progress.update(total, total)
                    self.progress.set_phase(self.after)
                    self.finished = self.completed = True
                else:
                    self.progress.update(total - 1, total)
            else:
                self.progress.update(done, total)
        self.progress.tick()

class _JobGroupPoller(_Watcher):
    """Classic: the block's jobs run under a job group; a thread polls the status tracker."""

    def __init__(self, spark, progress, tasks, total, label: str, interval: float,
                 after: Optional[str] = None) -> None:
        super().__init__(progress, tasks, total, after)
        self.sc = spark.sparkContext
        self.group = f"rocketfilter-progress-{uuid.uuid4().hex}"
        self.interval = interval
        self._stop = threading.Event()
        self._tracker = self.sc.statusTracker()
        self._previous = {key: self.sc.getLocalProperty(key) for key in _JOB_PROPERTIES}
        self.sc.setJobGroup(self.group, label)
        self._thread = threading.Thread(target=self._run, name="rocketfilter-progress", daemon=True)
        self._thread.start()

    def poll(self) -> None:
        tracker = self._tracker
        for job_id in tracker.getJobIdsForGroup(self.group):
            job = tracker.getJobInfo(job_id)
            for stage_id in (job.stageIds if job is not None else ()):
                stage = tracker.getStageInfo(stage_id)
                if stage is None:
                    continue
                if job.status == "SUCCEEDED" and not stage.numCompletedTasks:
                    self.stages.pop(stage_id, None)  # skipped: its output was already there
                else:
                    self.stages[stage_id] = (stage.numTasks, stage.numCompletedTasks)
        self.report()

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self.poll()
            except Exception:  # noqa: BLE001 - a dead tracker stops the display, not the work
                return

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)  # a daemon: never wait long on a stuck JVM call
        try:
            self.poll()  # the final counts
        except Exception:  # noqa: BLE001
            pass
        for key, value in self._previous.items():
            self.sc.setLocalProperty(key, value)  # None removes it again


class _ConnectHandler(_Watcher):
    """Spark Connect: a progress handler registered on the session for the block."""

    def __init__(self, spark, progress, tasks, total, after: Optional[str] = None) -> None:
        super().__init__(progress, tasks, total, after)
        self.spark = spark
        spark.registerProgressHandler(self)

    def __call__(self, stages=None, inflight_tasks=0, operation_id=None, done=False, **_) -> None:
        try:
            for stage in stages or ():
                key = (operation_id, stage.stage_id)
                if done and not stage.num_completed_tasks:
                    self.stages.pop(key, None)  # skipped: its output was already there
                else:
                    self.stages[key] = (stage.num_tasks, stage.num_completed_tasks)
            self.report()
        except Exception:  # noqa: BLE001 - never fail the query because of its progress
            pass

    def stop(self) -> None:
        self.spark.removeProgressHandler(self)


@contextmanager
def spark_progress(spark, label: str, *, unit: str = "tasks", total: Optional[int] = None,
                   tasks: Optional[int] = None, stream: Optional[TextIO] = None,
                   tty: Optional[bool] = None, clock: Callable[[], float] = time.monotonic,
                   delay: float = DEFAULT_DELAY, poll_interval: float = 0.5,
                   phase: Optional[str] = None, after: Optional[str] = None,
                   display: Optional[Progress] = None,
                   listener: Optional[Callable[[Update], None]] = None) -> Iterator[Progress]:
    """Show the progress of the Spark actions run in the block as ``label``.

    See the module docstring for how tasks map to ``unit`` (with ``total`` and ``tasks``), and
    :class:`Progress` for what is shown where. ``phase`` names what the counted tasks do
    (``reading``); with ``tasks``, ``after`` names what the block does once they are done
    (``writing``). ``display`` continues a :class:`Progress` the caller started (a command's,
    which showed "starting Spark" before): the block is one phase of it, and the caller closes
    it. ``listener`` receives every update (see :class:`Progress`). Yields the Progress.

    >>> with spark_progress(spark, "import", unit="files", total=40, tasks=8):   # doctest: +SKIP
    ...     df.write.parquet(out)
    """
    if display is None:
        progress = Progress(label, total=total, unit=unit, phase=phase, stream=stream, tty=tty, clock=clock,
                            delay=delay, listener=listener)
    else:
        progress = display
        progress.set_phase(phase or label, total=total, unit=unit)
    try:
        watcher = (_ConnectHandler(spark, progress, tasks, total, after) if is_connect(spark)
                   else _JobGroupPoller(spark, progress, tasks, total, label, poll_interval, after))
    except Exception:  # noqa: BLE001 - no tracker: the work runs without a display
        watcher = None
    try:
        yield progress
    except BaseException:
        _stop(watcher)
        if display is None:
            progress.close(failed=True)
        raise
    _stop(watcher)
    if progress.total is not None and (watcher is None or not watcher.completed):
        # Skipped stages never complete their tasks, and a caller may move on to its next
        # phase before the poller saw the last task end: the block's success is the count.
        progress.update(progress.total)
    if display is None:
        progress.close()


def _stop(watcher) -> None:
    if watcher is None:
        return
    try:
        watcher.stop()
    except Exception:  # noqa: BLE001
        pass


# What a ``progress=`` argument of a long operation (put, import, dispatch) may be.
ProgressOption = Union[bool, None, Callable[..., ContextManager]]


def progress_block(spark, progress: ProgressOption, label: str, **kwargs) -> ContextManager:
    """The display a ``progress=`` argument asks for around one block of Spark work: ``True``
    shows :func:`spark_progress` on stderr, a callable is called as
    ``progress(label, unit=..., total=..., tasks=...)``, and where the work has phases with
    ``phase=...`` and ``after=...`` too (a ``functools.partial`` of
    :func:`spark_progress` with a stream, say), ``False``/``None`` shows nothing.

    >>> with progress_block(spark, False, "put", unit="messages", total=10):   # doctest: +SKIP
    ...     df.write.parquet(out)
    """
    if progress is None or progress is False:
        return nullcontext()
    if progress is True:
        return spark_progress(spark, label, **kwargs)
    if not callable(progress):
        raise TypeError(f"progress must be True, False or a callable, got {type(progress).__name__}")
    return progress(label, **kwargs)
