"""Selector throughput on Spark: rocketfilter's compiled Column vs hand-written Columns vs a UDF.

Generates ``--rows`` synthetic messages with Spark itself (``spark.range`` and built-in
functions, nothing built on the driver), writes them as zstd parquet to a temporary directory,
then times one selector three ways, each as ``spark.read.parquet(path).filter(pred).count()``
(best of ``--repeat`` after one warm-up; (1) and (2) in interleaved rounds, so that load from
other processes skews neither), under ANSI mode on and off:

1. ``parse(SELECTOR).to_column("properties")`` -- rocketfilter's compiled Column;
2. the same predicate hand-written with plain Spark casts (no Java-exact parsing);
3. the Python reference evaluator in a plain Python ``udf`` (a baseline only).

    python bench/selector_throughput.py [--rows 5000000] [--repeat 3] [--explain]
                                        [--keep DIR [--reuse]]

Targets: (1)/(2) <= 1.3 and (3)/(1) >= 20.
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
# Python workers (the UDF) must import rocketfilter too; they inherit the JVM's environment.
os.environ["PYTHONPATH"] = os.pathsep.join(
    p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p)

SELECTOR = "(age BETWEEN 6 AND 9) AND (name IS NOT NULL) AND (isGender = TRUE)"
TARGET_HANDWRITTEN = 1.3  # (1)/(2) at most
TARGET_UDF = 20.0         # (3)/(1) at least


def session():
    from pyspark.sql import SparkSession

    try:
        from rocketfilter.session import get_spark
    except ImportError:  # pragma: no cover - older trees
        get_spark = None
    builder = (SparkSession.builder.appName("rocketfilter-bench-selector")
               .master("local[2]").config("spark.driver.memory", "4g")
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.python.sql.dataFrameDebugging.enabled", "false"))
    spark = get_spark(builder) if get_spark else builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def generate(spark, rows: int, path: str) -> None:
    """Messages with a properties map: age "0".."20", name on ~90%, isGender "true"/"false",
    and two fillers (TAGS, UNIQ_KEY). Keys whose value is null are dropped from the map, so a
    missing name is an absent key, as on the broker."""
    from pyspark.sql import functions as F

    def pick(salt: str, n: int):
        """A deterministic pseudo-random 0..n-1 per message, independent per salt."""
        return F.pmod(F.xxhash64(F.col("id"), F.lit(salt)), F.lit(n))

    props = F.map_filter(F.create_map(
        F.lit("age"), pick("age", 21).cast("string"),
        F.lit("name"), F.when(pick("name", 10) != 0,
                              F.concat(F.lit("user-"), F.col("id").cast("string"))),
        F.lit("isGender"), F.when(pick("gender", 2) == 0, F.lit("true")).otherwise(F.lit("false")),
        F.lit("TAGS"), F.concat(F.lit("Tag"), F.char(F.lit(65) + pick("tag", 4))),
        F.lit("UNIQ_KEY"), F.upper(F.hex(F.col("id") * 2654435761)),
    ), lambda k, v: v.isNotNull())
    (spark.range(rows, numPartitions=4)
     .select(F.col("id").alias("offset"), props.alias("properties"))
     .write.option("compression", "zstd").mode("overwrite").parquet(path))


def predicates():
    from pyspark.sql import functions as F
    from pyspark.sql.types import BooleanType

    from rocketfilter.selector import parse

    props = F.col("properties")
    sel = SELECTOR
    return {
        "rocketfilter": parse(sel).to_column("properties"),
        "hand-written": (props["age"].cast("int").between(6, 9) & props["name"].isNotNull()
                         & (F.lower(props["isGender"]) == "true")),
        "python-udf": F.udf(lambda m: parse(sel).matches(m or {}), BooleanType())(props),
    }


def best_times(spark, path: str, preds: dict, repeat: int) -> dict:
    """Best of ``repeat`` timed counts per predicate, after one warm-up each. The rounds are
    interleaved (1, 2, 1, 2, ...) so that load from other processes on a shared machine hits
    every predicate alike instead of skewing their ratio."""
    frames = {name: spark.read.parquet(path).filter(pred) for name, pred in preds.items()}
    counts = {name: df.count() for name, df in frames.items()}  # warm-up
    times: dict = {name: [] for name in frames}
    for _ in range(repeat):
        for name, df in frames.items():
            start = time.perf_counter()
            again = df.count()
            times[name].append(time.perf_counter() - start)
            assert again == counts[name], (name, again, counts[name])
    return {name: (min(times[name]), counts[name]) for name in frames}


def run_mode(spark, path: str, ansi: str, repeat: int, explain: bool) -> dict:
    spark.conf.set("spark.sql.ansi.enabled", ansi)
    print(f"\n== spark.sql.ansi.enabled={ansi} ==")
    preds = predicates()
    if explain:
        for name in ("rocketfilter", "hand-written"):
            print(f"-- plan: {name}")
            spark.read.parquet(path).filter(preds[name]).explain("formatted")
    results = best_times(spark, path, {k: preds[k] for k in ("rocketfilter", "hand-written")},
                         repeat)
    results.update(best_times(spark, path, {"python-udf": preds["python-udf"]}, repeat))
    for i, (name, (seconds, count)) in enumerate(results.items(), 1):
        print(f"  ({i}) {name:13s} best {seconds:7.3f} s   count {count:,}", flush=True)
    counts = {c for _, c in results.values()}
    (t1, _), (t2, _), (t3, _) = (results[k] for k in ("rocketfilter", "hand-written",
                                                      "python-udf"))
    r12, r31 = t1 / t2, t3 / t1
    listed = ", ".join(f"{c:,}" for _, c in results.values())
    print(f"  counts equal: {len(counts) == 1} ({listed})")
    print(f"  (1)/(2) rocketfilter / hand-written = {r12:.2f}  (target <= {TARGET_HANDWRITTEN}): "
          f"{'OK' if r12 <= TARGET_HANDWRITTEN else 'MISSED'}")
    print(f"  (3)/(1) udf / rocketfilter          = {r31:.1f}  (target >= {TARGET_UDF:g}): "
          f"{'OK' if r31 >= TARGET_UDF else 'MISSED'}")
    if len(counts) != 1:
        raise SystemExit(f"counts differ under ansi={ansi}: {results}")
    return results


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=5_000_000)
    parser.add_argument("--repeat", type=int, default=3, help="timed runs per way (best kept)")
    parser.add_argument("--explain", action="store_true", help="print the formatted plans")
    parser.add_argument("--keep", metavar="DIR", help="write the data here and keep it")
    parser.add_argument("--reuse", action="store_true",
                        help="with --keep: reuse the data already in DIR (generating 5M rows "
                             "takes about a minute)")
    args = parser.parse_args(argv)

    spark = session()
    workdir = args.keep or tempfile.mkdtemp(prefix="rocketfilter-bench-")
    path = os.path.join(workdir, "messages.parquet")
    try:
        start = time.perf_counter()
        reused = args.reuse and args.keep and Path(path).is_dir()
        if not reused:
            generate(spark, args.rows, path)
        rows = spark.read.parquet(path).count()
        size = sum(f.stat().st_size for f in Path(path).glob("*.parquet"))
        print(f"selector: {SELECTOR}")
        print(f"data: {rows:,} rows, {size / 2**20:.1f} MiB zstd parquet, "
              f"{'reused' if reused else 'written'} in {time.perf_counter() - start:.1f} s "
              f"({path})")
        print(f"spark {spark.version}, master {spark.sparkContext.master}, "
              f"best of {args.repeat} after one warm-up")
        for ansi in ("true", "false"):
            run_mode(spark, path, ansi, args.repeat, args.explain)
    finally:
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
        spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
