"""Import throughput: a real-format RocketMQ broker store, written with rocketfilter's own record
writer (``rocketfilter.broker_files.records``), imported into a fresh rocketfilter store, in MB/s.

The broker store (``--gigabytes`` of commit log in ``--file-mb`` files, 4 queues of one topic,
~200-byte bodies and five properties per message, end-of-file blanks and the consume-queue
units) is generated under ``--dir`` (default: a temporary directory, removed afterwards; keep it
out of the repository). ``--promote N`` sets ``promoteTopProperties`` for the import.

    python bench/import_store.py [--gigabytes 2] [--file-mb 256] [--dir /tmp/rf-broker] [--reuse]
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ["PYTHONPATH"] = os.pathsep.join(
    p for p in (str(Path(__file__).resolve().parent.parent), os.environ.get("PYTHONPATH")) if p)

TOPIC = "ImportBench"
QUEUES = 4
CQ_FILE_UNITS = 300_000


def _record(n: int, queue_offset: int, commitlog_offset: int) -> bytes:
    """Message ``n``: every message has the same size, so each file can be written on its own."""
    from rocketfilter.broker_files.records import encode_record

    return encode_record(
        topic=TOPIC, queue_id=n % QUEUES, queue_offset=queue_offset, commitlog_offset=commitlog_offset,
        body=f"{n:020d}".encode() * 10,
        properties={"TAGS": f"Tag{n % 5}", "age": f"{n % 21:02d}", "name": f"user-{n % 997:03d}",
                    "region": ("eu", "us", "ap")[n % 3], "UNIQ_KEY": f"{n:032X}"},
        born_timestamp=1_700_000_000_000 + n, store_timestamp=1_700_000_000_000 + n)


def _write_file(job: tuple) -> None:
    """Commit-log file ``i``: its records, the end-of-file blank, zeros to the file size."""
    root, i, per_file, size, file_bytes = job
    start = i * file_bytes
    with open(Path(root) / "commitlog" / f"{start:020d}", "wb") as f:
        for k in range(per_file):
            n = i * per_file + k
            f.write(_record(n, n // QUEUES, start + k * size))
        used = per_file * size
        from rocketfilter.broker_files.records import encode_blank

        f.write(encode_blank(file_bytes - used) + bytes(file_bytes - used - 8))


def generate(root: Path, total_bytes: int, file_bytes: int) -> int:
    """Write the broker store (commit-log files in parallel processes); return the messages."""
    from multiprocessing import Pool

    from rocketfilter.broker_files.records import encode_cq_unit
    from rocketfilter.tags import tags_code

    (root / "commitlog").mkdir(parents=True)
    size = len(_record(0, 0, 0))
    per_file = (file_bytes - 8) // size
    files = max(1, -(-total_bytes // file_bytes))
    with Pool(4) as pool:
        pool.map(_write_file, [(str(root), i, per_file, size, file_bytes) for i in range(files)])
    n = files * per_file
    for q in range(QUEUES):
        units = bytearray()
        for m in range(q, n, QUEUES):
            i, k = divmod(m, per_file)
            units += encode_cq_unit(i * file_bytes + k * size, size, tags_code(f"Tag{m % 5}"))
        directory = root / "consumequeue" / TOPIC / str(q)
        directory.mkdir(parents=True)
        step = CQ_FILE_UNITS * 20
        for start in range(0, len(units), step):
            chunk = units[start:start + step]
            with open(directory / f"{start:020d}", "wb") as f:
                f.write(chunk + bytes(step - len(chunk)))
    return n


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gigabytes", type=float, default=2.0)
    parser.add_argument("--file-mb", type=int, default=256)
    parser.add_argument("--dir", help="where the broker store goes (kept); default: a temporary one")
    parser.add_argument("--reuse", action="store_true", help="with --dir: import the store already there")
    parser.add_argument("--promote", type=int, default=0, help="promoteTopProperties for the import")
    args = parser.parse_args(argv)

    from pyspark.sql import SparkSession

    from rocketfilter.config import MessageStoreConfig
    from rocketfilter.session import get_spark
    from rocketfilter.store import MessageStore

    base = Path(args.dir or tempfile.mkdtemp(prefix="rf-broker-"))
    source, target = base / "broker", base / "rocketfilter"
    try:
        if not (args.reuse and (source / "commitlog").is_dir()):
            shutil.rmtree(source, ignore_errors=True)
            t0 = time.perf_counter()
            n = generate(source, int(args.gigabytes * 2**30), args.file_mb * 2**20)
            print(f"generated {n:,} messages in {time.perf_counter() - t0:.0f} s at {source}")
        size = sum(p.stat().st_size for p in (source / "commitlog").iterdir())
        spark = get_spark(SparkSession.builder.appName("rocketfilter-bench-import").master("local[2]")
                          .config("spark.driver.memory", "4g").config("spark.ui.enabled", "false"))
        spark.sparkContext.setLogLevel("ERROR")
        shutil.rmtree(target, ignore_errors=True)
        store = MessageStore.open(str(target), spark, MessageStoreConfig(promote_top_properties=args.promote))
        load = os.getloadavg()
        t0 = time.perf_counter()
        report = store.import_store(str(source))
        seconds = time.perf_counter() - t0
        print(f"imported {report.messages:,} messages, {size / 1e6:,.0f} MB of commit log "
              f"({report.commitlog_files} files) in {seconds:.0f} s: {size / 1e6 / seconds:.1f} MB/s, "
              f"{report.messages / seconds:,.0f} messages/s; load average {load[0]:.1f} before, "
              f"{os.getloadavg()[0]:.1f} after; promoted {sorted(store.promoted_properties())}")
        spark.stop()
    finally:
        if not args.dir:
            shutil.rmtree(base, ignore_errors=True)
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    sys.exit(main())
