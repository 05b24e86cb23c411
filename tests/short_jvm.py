"""JVM options for the Spark JVMs the suite starts besides its shared session.

Those live for one job or one command (the sink's put processes, job and CLI subprocesses, a
standalone cluster, Delta's connector), so they run C1 only: most of what C2 would compile does
not live long enough to pay it back (measured: a 12-row sink put used 23-25 core-s instead of
37-40). The shared session keeps the full JIT: with C1 only, tests/selector and tests/pull took
383 s instead of 304 s. All of them map Spark's classes from the suite's class-data-sharing
archive (tests/jvm_archive.py), and every one of them, the shared session's included, collects
with the parallel collector (:func:`gc_options`).
"""
from __future__ import annotations

import os
import re

from tests.jvm_archive import OPTIONS as ARCHIVE_OPTIONS


def gc_options(options: str = "") -> str:
    """The parallel (throughput) collector unless ``options`` already choose one (two would stop
    the JVM). On these 2 cores G1's concurrent work costs more than the parallel collector's
    pauses: tests/pull and tests/groups used 342 busy core-s instead of 372 and took 217 s instead
    of 234 (means of 3 and 4 alternating runs)."""
    return "" if re.search(r"-XX:\+Use\w+GC\b", options) else "-XX:+UseParallelGC"


def short_jvm_options(caller: str = "") -> str:
    """The options a short-lived JVM adds to the ``caller``'s own."""
    return " ".join(filter(None, ("-XX:TieredStopAtLevel=1", gc_options(caller), ARCHIVE_OPTIONS)))


SHORT_JVM_OPTIONS = short_jvm_options()


def add_short_jvm_options(names=("SPARK_SUBMIT_OPTS", "SPARK_DAEMON_JAVA_OPTS")) -> None:
    """Append the options to these environment variables of this process (and its children):
    ``SPARK_SUBMIT_OPTS`` for spark-submit's JVMs, ``SPARK_DAEMON_JAVA_OPTS`` for spark-class's
    standalone master and worker."""
    for name in names:
        mine = os.environ.get(name, "")
        os.environ[name] = " ".join(filter(None, (mine, short_jvm_options(mine))))
