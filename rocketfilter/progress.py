"""Progress of long work, in phases: a live display on a terminal (drawn by ``rich``), one summary
line otherwise.

:class:`Progress` reports the current phase and, where the phase counts something, "done of
total" in the caller's units (files, messages)::

    import: starting Spark ━━━━━━━━ 0:12 elapsed                        (a terminal, redrawn in place)
    import: reading ━━━╸━━━━ 12/40 files (30%) 3.2 files/s ETA 0:09
    import: committing ━━━━━━━━ 40 files done, 0:31 elapsed
    import: 40 files in 0:36 (1.1 files/s)                              (the summary, terminal or not)

The rules, so that the display tells the truth and quick work stays silent:

* A phase counts only what it does; 100% is shown only once its work is done, and a phase that
  follows a counting one (``writing``, ``committing``) shows its name and the time, never a
  stale 100%. :meth:`Progress.update` never goes backwards; a new phase (:meth:`set_phase`)
  starts its own count.
* Nothing is shown for work that ends within ``delay`` seconds (2 by default), terminal or not.
* On a terminal, past ``delay`` the display is redrawn at most every ``interval`` seconds and,
  at the end, replaced by the summary line.
* Not on a terminal (a log file, a pipe, spark-submit, which pipes the Python driver's output),
  nothing is written while the work runs: only the summary line at the end.
* Work that fails ends with "stopped at 12/40 files after 0:05 (reading)" instead; the caller
  reports the error itself.
* Writing progress never raises: a closed or broken stream just ends the display.

``listener`` (a callable) receives every :class:`Update` (phase, done, total), the final one
with ``final=True``: what the tests record to check that the display never runs ahead.

:func:`rocketfilter.spark_progress.spark_progress` feeds a :class:`Progress` from the Spark
actions of a block.
"""
from __future__ import annotations

import sys
import threading
import time
from dataclasses import dataclass
from typing import Callable, List, Optional, TextIO

DEFAULT_DELAY = 2.0
DEFAULT_INTERVAL = 0.25


def format_duration(seconds: float) -> str:
    """``0:09``, ``1:41``, ``1:02:03``: whole seconds, hours only when needed."""
    total = max(0, int(round(seconds)))
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def format_rate(per_second: float, unit: str) -> str:
    """``3.2 files/s`` below 100, ``1,234 messages/s`` above."""
    text = f"{per_second:.1f}" if per_second < 100 else f"{per_second:,.0f}"
    return f"{text} {unit}/s"


def is_terminal(stream: TextIO) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):  # no isatty, or a closed stream
        return False


@dataclass(frozen=True)
class Update:
    """One state of a :class:`Progress`: the phase, the count in ``unit`` (``total`` None when
    unknown), and ``final`` for the last one (the work ended, or failed)."""

    phase: Optional[str]
    done: int
    total: Optional[int]
    unit: str
    final: bool = False
    failed: bool = False


class Progress:
    """Progress of ``label`` in ``unit``s, in phases: :meth:`set_phase`, :meth:`update` with the
    count done, then :meth:`close` (or use it as a context manager). Thread-safe: a poller
    thread may update it.

    ``stream`` defaults to ``sys.stderr``; ``tty`` to whether the stream is a terminal; ``clock``
    to ``time.monotonic`` (tests pass fakes for all three). On a terminal a daemon thread redraws
    every ``interval`` while nothing reports (``ticker=False``: only updates and :meth:`tick` do).

    >>> import io
    >>> now = [0.0]
    >>> out = io.StringIO()
    >>> with Progress("import", total=40, unit="files", stream=out, clock=lambda: now[0]) as p:
    ...     now[0] = 12.0
    ...     p.update(40)
    >>> out.getvalue()
    'import: 40 files in 0:12 (3.3 files/s)\\n'
    """

    def __init__(self, label: str, total: Optional[int] = None, unit: str = "items", *,
                 phase: Optional[str] = None, stream: Optional[TextIO] = None, tty: Optional[bool] = None,
                 clock: Callable[[], float] = time.monotonic, delay: float = DEFAULT_DELAY,
                 interval: float = DEFAULT_INTERVAL, ticker: bool = True,
                 listener: Optional[Callable[[Update], None]] = None) -> None:
        self.label, self.total, self.unit, self.phase = label, total, unit, phase
        self.stream = sys.stderr if stream is None else stream
        self.tty = is_terminal(self.stream) if tty is None else tty
        self.clock, self.delay, self.interval = clock, delay, interval
        self.listener = listener
        self.done = 0
        self._counts = total is not None   # whether this phase counts (a total, or updates)
        self.counted = 0          # units counted by earlier phases (the summary's count)
        self.started = self.phase_started = clock()
        self.closed = False
        self.phases: List[Optional[str]] = [phase]
        self._live = None         # the rich display, once drawn
        self._drawn_at: Optional[float] = None
        self._shown: Optional[tuple] = None   # what is on screen
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._notify()
        if self.tty and ticker:
            # Redraws while nothing reports (a JVM starting, a commit): the time moves on.
            threading.Thread(target=self._tick_until_closed, name="rocketfilter-progress-tick",
                             daemon=True).start()

    def _tick_until_closed(self) -> None:
        while not self._stop.wait(self.interval):
            self.tick()

    # -- the caller's side ----------------------------------------------------------------------
    def set_phase(self, phase: str, *, total: Optional[int] = None, unit: Optional[str] = None) -> None:
        """Move on to ``phase``. With ``total`` (and ``unit``) it counts anew from 0; without,
        it shows its name and the time, and the count of the phase before stays the summary's."""
        with self._lock:
            if self.closed or phase == self.phase:
                return
            self.counted = max(self.counted, self.done)
            self._counts = total is not None
            if total is not None:
                self.done, self.total = 0, total
                self.phase_started = self.clock()
            if unit is not None:
                self.unit = unit
            self.phase = phase
            self.phases.append(phase)
            self._changed(force=True)

    def update(self, done: int, total: Optional[int] = None) -> None:
        """Set the count done in this phase (never goes backwards) and, if it became known, the
        total."""
        with self._lock:
            if self.closed:
                return
            before = (self.done, self.total)
            self._counts = True
            if total is not None:
                self.total = total
            self.done = max(self.done, int(done))
            if (self.done, self.total) != before:
                self._changed()

    def advance(self, n: int = 1) -> None:
        """Count ``n`` more done."""
        with self._lock:
            if self.closed:
                return
            self.done += n
            self._counts = True
            self._changed()

    def tick(self) -> None:
        """Redraw if due, without new counts (the time and ETA move on)."""
        with self._lock:
            if not self.closed:
                self._draw()

    def close(self, failed: bool = False) -> None:
        """End the display: the summary line if the work took ``delay`` or more (or a live
        display is on screen). ``failed`` reports where it stopped instead."""
        with self._lock:
            if self.closed:
                return
            self._notify(final=True, failed=failed)
            self.closed = True
            self._stop.set()
            elapsed = self.clock() - self.started
            drawn = self._live is not None
            self._stop_live()
            if not drawn and elapsed < self.delay:
                return
            line = self.stopped_line(elapsed) if failed else self.summary_line(elapsed)
            self._write(line + "\n")

    def __enter__(self) -> "Progress":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        self.close(failed=exc_type is not None)

    # -- text -----------------------------------------------------------------------------------
    def _count(self) -> str:
        return f"{self.done}/{self.total}" if self.total is not None else f"{self.done}"

    @property
    def counting(self) -> bool:
        """Whether the phase is counting: its count has started (a total, or an update) and has
        not reached its total."""
        return self._counts and (self.total is None or self.done < self.total)

    def parts(self, elapsed: float) -> tuple:
        """The display as ``(head, count)`` text: ``("import: reading", "12/40 files (30%) 3.2
        files/s ETA 0:09")`` while a phase counts; ``("import: committing", "40 files done, 0:31
        elapsed")`` once it no longer does (never a 100% before the end)."""
        head = f"{self.label}: {self.phase}" if self.phase else f"{self.label}:"
        if not self.counting:
            done = max(self.done, self.counted)
            count = f"{done} {self.unit} done, " if done else ""
            return head, f"{count}{format_duration(elapsed)} elapsed"
        parts = [f"{self._count()} {self.unit}"]
        if self.total:
            parts.append(f"({100 * self.done // self.total}%)")
        counting_for = elapsed - (self.phase_started - self.started)   # this phase's count's time
        if self.done and counting_for > 0:
            rate = self.done / counting_for
            parts.append(format_rate(rate, self.unit))
            if self.total is not None:
                parts.append(f"ETA {format_duration((self.total - self.done) / rate)}")
        return head, " ".join(parts)

    def live_line(self, elapsed: float) -> str:
        """:meth:`parts` as one line: ``import: reading 12/40 files (30%) 3.2 files/s ETA 0:09``."""
        return " ".join(self.parts(elapsed))

    def summary_line(self, elapsed: float) -> str:
        """``import: 40 files in 0:12 (3.3 files/s)``; ``38/40`` if it ended short of the total."""
        done = max(self.done, self.counted)
        short = self.total is not None and self.done != self.total and self.done >= self.counted
        count = self._count() if short else f"{done}"
        line = f"{self.label}: {count} {self.unit} in {format_duration(elapsed)}"
        if done and elapsed > 0:
            line += f" ({format_rate(done / elapsed, self.unit)})"
        return line

    def stopped_line(self, elapsed: float) -> str:
        """``import: stopped at 12/40 files after 0:05 (reading)``."""
        where = f" ({self.phase})" if self.phase else ""
        return f"{self.label}: stopped at {self._count()} {self.unit} after {format_duration(elapsed)}{where}"

    # -- drawing --------------------------------------------------------------------------------
    def _notify(self, final: bool = False, failed: bool = False) -> None:
        if self.listener is None:
            return
        try:
            self.listener(Update(self.phase, self.done, self.total, self.unit, final, failed))
        except Exception:  # noqa: BLE001 - a listener never fails the work
            self.listener = None

    def _changed(self, force: bool = False) -> None:
        self._notify()
        self._draw(force)

    def _draw(self, force: bool = False) -> None:
        if not self.tty:
            return
        now = self.clock()
        elapsed = now - self.started
        if elapsed < self.delay:
            return
        if not force and self._drawn_at is not None and now - self._drawn_at < self.interval:
            return
        parts = self.parts(elapsed)
        if parts == self._shown:
            return  # nothing moved: leave the terminal alone
        try:
            if self._live is None:
                self._live = _LiveDisplay(self.stream, self.clock)
            self._live.show(self, elapsed)
            self._shown = parts
        except (OSError, ValueError):  # a closed or broken stream: stop showing, keep working
            self._broken()
            return
        self._drawn_at = now

    def _stop_live(self) -> None:
        if self._live is not None:
            try:
                self._live.stop()
            except (OSError, ValueError):
                self._broken()
            self._live = None

    def _broken(self) -> None:
        self._stop.set()
        self.tty = False
        self._live = None
        self._drawn_at = None
        self.closed = True

    def _write(self, text: str) -> None:
        try:
            self.stream.write(text)
            self.stream.flush()
        except (OSError, ValueError):  # a closed or broken stream: stop showing, keep working
            self._broken()


class _LiveDisplay:
    """The terminal side: one ``rich`` progress task, redrawn in place and removed at the end
    (the summary line replaces it). rich measures the terminal's width and the display width of
    what it draws; it is imported only when something is drawn."""

    def __init__(self, stream: TextIO, clock: Callable[[], float]) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, Progress as RichProgress, TextColumn

        console = Console(file=stream, force_terminal=True, highlight=False, soft_wrap=False)
        self.rich = RichProgress(TextColumn("{task.description}"), BarColumn(bar_width=24),
                                 TextColumn("{task.fields[count]}"),
                                 console=console, auto_refresh=False, transient=True, get_time=clock,
                                 redirect_stdout=False, redirect_stderr=False)
        self.task = self.rich.add_task("", total=None, count="")
        self.started = False

    def show(self, progress: Progress, elapsed: float) -> None:
        head, count = progress.parts(elapsed)
        self.text = f"{head} {count}"   # what the tests read back
        bar = progress.counting and progress.total is not None   # else the bar pulses: work, no count
        self.rich.update(self.task, description=head, total=progress.total if bar else None,
                         completed=progress.done if bar else 0, count=count)
        if not self.started:
            self.started = True
            self.rich.start()   # draws what was just set
        else:
            self.rich.refresh()

    def stop(self) -> None:
        self.rich.stop()
