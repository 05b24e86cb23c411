"""A class-data-sharing (CDS) archive of Spark's classes for the JVMs the suite starts.

Each Spark JVM loads, parses and verifies some ten thousand classes before its first query.
HotSpot can keep them, ready to map, in an archive dumped at the exit of a JVM that loaded them
(``-XX:ArchiveClassesAtExit``, JDK 13+). Measured on a 2-core machine, a bare local Spark start
and ``count()`` (C1 only): 12.6 s and 14.2 CPU-s without the archive, 6.2 s and 7.0 CPU-s with;
tests/test_session.py, test_sink.py, test_notebooks.py, test_cli_engine.py and store/test_store.py
together 255 s without, 214 s with.

The archive is a per-machine cache (about 190 MB) under ``~/.cache/rocketfilter/cds`` (or
``$ROCKETFILTER_CDS_DIR``), named by the pyspark and java versions (``ROCKETFILTER_CDS=0``
leaves it out). ``python -m tests.jvm_archive``
builds it (about a minute; ``.ci/run`` does so before the tests); otherwise the suite starts the
build in the background and the JVMs started after it is done use it. A JVM whose JDK or
classpath differs from the archive's (the Delta connector's pyspark 4.2, say) ignores it
silently, as it does a missing file, so :data:`OPTIONS` always name it.
"""
from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tempfile
import time
from functools import lru_cache
from pathlib import Path

import pyspark

# No JVM log lines about the archive: a missing or foreign archive only means no sharing.
_QUIET = "-Xlog:cds=off,cds+dynamic=off"


@lru_cache(maxsize=None)   # one `java -version` per process, however often asked
def _java_version() -> str:
    try:
        done = subprocess.run(["java", "-version"], capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return done.stderr


def archive_path() -> Path:
    root = Path(os.environ.get("ROCKETFILTER_CDS_DIR") or Path.home() / ".cache" / "rocketfilter" / "cds")
    key = hashlib.sha256(f"{pyspark.__version__}\n{os.path.dirname(pyspark.__file__)}\n{_java_version()}"
                         .encode()).hexdigest()[:16]
    return root / f"spark-{pyspark.__version__}-{key}.jsa"


# ROCKETFILTER_CDS=0: no archive, neither built nor used (to measure without it).
ENABLED = os.environ.get("ROCKETFILTER_CDS", "1") != "0"
ARCHIVE = archive_path()
OPTIONS = f"-XX:SharedArchiveFile={ARCHIVE} {_QUIET}" if ENABLED else ""


def _workload() -> None:
    """What the dumping JVM runs: a session, parquet, a shuffle, a map column, Arrow to Python."""
    from pyspark.sql import SparkSession, functions as F

    spark = (SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
             .config("spark.ui.showConsoleProgress", "false").getOrCreate())
    print(spark._jvm.ProcessHandle.current().pid(), flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        df = spark.range(100).select("id", (F.col("id") % 3).alias("k"),
                                     F.create_map(F.lit("a"), F.col("id").cast("string")).alias("m"))
        df.write.parquet(f"{tmp}/p")
        read = spark.read.parquet(f"{tmp}/p")
        read.groupBy("k").count().collect()
        read.filter(F.col("m")["a"].cast("int") > 5).orderBy("id").collect()
        read.select("id", "k").mapInArrow(lambda batches: batches, "id long, k long").collect()
        read.join(read.select("id"), "id").count()
    spark.stop()


def build(timeout: float = 600) -> bool:
    """Dump the archive (once per machine: a lock file keeps a second build out); True when it
    exists afterwards. The JVM writes it as it exits, after its Python has gone, so this waits
    for the JVM's PID, and only a complete dump is renamed to :data:`ARCHIVE`."""
    if not ENABLED or ARCHIVE.exists():
        return ARCHIVE.exists()
    try:
        ARCHIVE.parent.mkdir(parents=True, exist_ok=True)
    except OSError:
        return False
    lock = ARCHIVE.with_suffix(".lock")
    try:
        fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    except FileExistsError:
        if time.time() - lock.stat().st_mtime < timeout:
            return False   # another build is under way
        lock.unlink(missing_ok=True)   # left by a build that died
        return build(timeout)
    os.close(fd)
    for stale in ARCHIVE.parent.glob("*.partial"):   # dumped by the JVM of a build that died
        if time.time() - stale.stat().st_mtime > timeout:
            stale.unlink(missing_ok=True)
    partial = ARCHIVE.with_suffix(f".{os.getpid()}.partial")
    try:
        env = dict(os.environ, SPARK_SUBMIT_OPTS=f"-XX:TieredStopAtLevel=1 -XX:ArchiveClassesAtExit={partial} {_QUIET}")
        try:
            done = subprocess.run([sys.executable, "-m", "tests.jvm_archive", "--workload"], env=env,
                                  capture_output=True, text=True, timeout=timeout,
                                  cwd=Path(__file__).resolve().parent.parent)
        except subprocess.TimeoutExpired as timed_out:   # no archive is only slower: never a failure
            # Its JVM would dump as it exits: killed, it writes nothing.
            printed = timed_out.stdout or b""
            pid = (printed.decode() if isinstance(printed, bytes) else printed).split()[:1]
            if pid and pid[0].isdigit():
                subprocess.run(["kill", "-9", pid[0]], capture_output=True)
            return False
        pid = done.stdout.split()[0] if done.returncode == 0 and done.stdout.split() else None
        deadline = time.monotonic() + timeout
        while pid and Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
            time.sleep(0.5)
        if pid and partial.exists() and not Path(f"/proc/{pid}").exists():
            os.replace(partial, ARCHIVE)
    finally:
        partial.unlink(missing_ok=True)
        lock.unlink(missing_ok=True)
    return ARCHIVE.exists()


def build_in_background() -> None:
    """Start :func:`build` in a process of its own when the archive is missing (never waited on)."""
    if not ENABLED or ARCHIVE.exists() or not _java_version():
        return
    subprocess.Popen([sys.executable, "-m", "tests.jvm_archive"], stdout=subprocess.DEVNULL,
                     stderr=subprocess.DEVNULL, start_new_session=True,
                     cwd=Path(__file__).resolve().parent.parent)


if __name__ == "__main__":
    if sys.argv[1:] == ["--workload"]:
        _workload()
    else:
        ok = build()
        print(ARCHIVE if ok else f"no archive built at {ARCHIVE}")
