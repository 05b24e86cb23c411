"""Progress of long work: one redrawn line on a terminal, one summary line otherwise.

:class:`Progress` reports "done of total" in the caller's units (files, messages)::

    import: 12/40 files (30%) 3.2 files/s ETA 0:09        (a terminal, redrawn in place)
    import: 40 files in 0:12 (3.3 files/s)                (the summary, terminal or not)

The rules, so that quick work stays silent and logs stay short:

* Nothing is shown for work that ends within ``delay`` seconds (2 by default), terminal or not.
* On a terminal, past ``delay`` the line is redrawn at most every ``interval`` seconds and,
  at the end, replaced by the summary line.
* Not on a terminal (a log file, a pipe, spark-submit, which pipes the Python driver's output),
  nothing is written while the work runs: only the summary line at the end.
* Work that fails ends the line with "stopped at 12/40 files after 0:05" instead; the caller
  reports the error itself.
* Writing progress never raises: a closed or broken stream just ends the display.

:func:`rocketfilter.spark_progress.spark_progress` feeds a :class:`Progress` from the Spark
actions of a block.
"""
from __future__ import annotations

import sys
import threading
import time
from typing import Callable, Optional, TextIO

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


class Progress:
    """Progress of ``label`` in ``unit``s: :meth:`update` with the count done, then :meth:`close`
    (or use it as a context manager). Thread-safe: a poller thread may update it.

    ``stream`` defaults to ``sys.stderr``; ``tty`` to whether the stream is a terminal; ``clock``
    to ``time.monotonic`` (tests pass fakes for all three).

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
                 stream: Optional[TextIO] = None, tty: Optional[bool] = None,
                 clock: Callable[[], float] = time.monotonic, delay: float = DEFAULT_DELAY,
                 interval: float = DEFAULT_INTERVAL) -> None:
        self.label, self.total, self.unit = label, total, unit
        self.stream = sys.stderr if stream is None else stream
        self.tty = is_terminal(self.stream) if tty is None else tty
        self.clock, self.delay, self.interval = clock, delay, interval
        self.done = 0
        self.started = clock()
        self.closed = False
        self._drawn_at: Optional[float] = None  # when the live line was last drawn
        self._width = 0  # length of the live line on screen, to blank it out
        self._line = ""  # the live line on screen
        self._lock = threading.Lock()

    # -- the caller's side ----------------------------------------------------------------------
    def update(self, done: int, total: Optional[int] = None) -> None:
        """Set the count done (never goes backwards) and, if it became known, the total."""
        with self._lock:
            if self.closed:
                return
            if total is not None:
                self.total = total
            self.done = max(self.done, int(done))
            self._maybe_draw()

    def advance(self, n: int = 1) -> None:
        """Count ``n`` more done."""
        with self._lock:
            if self.closed:
                return
            self.done += n
            self._maybe_draw()

    def close(self, failed: bool = False) -> None:
        """End the display: the summary line if the work took ``delay`` or more (or a live line
        is on screen). ``failed`` reports where it stopped instead."""
        with self._lock:
            if self.closed:
                return
            self.closed = True
            elapsed = self.clock() - self.started
            if self._drawn_at is None and elapsed < self.delay:
                return
            line = self.stopped_line(elapsed) if failed else self.summary_line(elapsed)
            self._write(("\r" + line.ljust(self._width) if self.tty and self._width else line) + "\n")

    def __enter__(self) -> "Progress":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        self.close(failed=exc_type is not None)

    # -- text -----------------------------------------------------------------------------------
    def _count(self) -> str:
        return f"{self.done}/{self.total}" if self.total is not None else f"{self.done}"

    def live_line(self, elapsed: float) -> str:
        """``import: 12/40 files (30%) 3.2 files/s ETA 0:09``."""
        parts = [f"{self.label}: {self._count()} {self.unit}"]
        if self.total:
            parts.append(f"({100 * self.done // self.total}%)")
        if self.done and elapsed > 0:
            rate = self.done / elapsed
            parts.append(format_rate(rate, self.unit))
            if self.total is not None and self.total >= self.done:
                parts.append(f"ETA {format_duration((self.total - self.done) / rate)}")
        return " ".join(parts)

    def summary_line(self, elapsed: float) -> str:
        """``import: 40 files in 0:12 (3.3 files/s)``; ``38/40`` if it ended short of the total."""
        count = self._count() if self.total is not None and self.done != self.total else f"{self.done}"
        line = f"{self.label}: {count} {self.unit} in {format_duration(elapsed)}"
        if self.done and elapsed > 0:
            line += f" ({format_rate(self.done / elapsed, self.unit)})"
        return line

    def stopped_line(self, elapsed: float) -> str:
        """``import: stopped at 12/40 files after 0:05``."""
        return f"{self.label}: stopped at {self._count()} {self.unit} after {format_duration(elapsed)}"

    # -- drawing --------------------------------------------------------------------------------
    def _maybe_draw(self) -> None:
        if not self.tty:
            return
        now = self.clock()
        elapsed = now - self.started
        if elapsed < self.delay:
            return
        if self._drawn_at is not None and now - self._drawn_at < self.interval:
            return
        line = self.live_line(elapsed)
        if line == self._line:
            return  # nothing moved: leave the terminal alone
        self._write("\r" + line.ljust(self._width))
        self._drawn_at, self._width, self._line = now, len(line), line

    def tick(self) -> None:
        """Redraw if due, without new counts (the rate and ETA move on)."""
        with self._lock:
            if not self.closed:
                self._maybe_draw()

    def _write(self, text: str) -> None:
        try:
            self.stream.write(text)
            self.stream.flush()
        except (OSError, ValueError):  # a closed or broken stream: stop showing, keep working
            self.tty = False
            self._drawn_at = None
            self.closed = True
