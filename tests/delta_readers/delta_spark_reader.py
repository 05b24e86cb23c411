"""Reads a rocketfilter store's tables with Delta Lake's own Spark connector, as a Databricks user
would: ``CREATE TABLE ... USING DELTA LOCATION``, SQL, ``VERSION AS OF`` and
``option("versionAsOf")``. Runs in the separate environment of :mod:`.delta_spark_env`
(pyspark 4.2 and the ``io.delta`` jars; no rocketfilter), as
``python delta_spark_reader.py REQUEST_JSON``: writes each read as parquet under ``out`` and
prints one JSON line of schemas, counts and histories."""
import json
import sys

from pyspark.sql import SparkSession


def main(request):
    spark = (SparkSession.builder.master("local[1]").appName("delta-spark-reader")
             .config("spark.jars.packages", request["package"])
             .config("spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension")
             .config("spark.sql.catalog.spark_catalog", "org.apache.spark.sql.delta.catalog.DeltaCatalog")
             .config("spark.sql.warehouse.dir", request["out"] + "/warehouse")
             .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.session.timeZone", "UTC")
             # Tiny tables: Delta's 50 snapshot partitions and Spark's 200 shuffle partitions
             # would each be a task per read
             .config("spark.databricks.delta.snapshotPartitions", "1")
             .config("spark.sql.shuffle.partitions", "1").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    result = {"spark": spark.version, "tables": {}}
    for name, spec in request["tables"].items():
        location, version = spec["location"], spec["version"]
        spark.sql(f"CREATE TABLE rf_{name} USING DELTA LOCATION '{location}'")
        latest = spark.table(f"rf_{name}")
        latest.write.parquet(f"{request['out']}/{name}/latest")
        old = spark.read.format("delta").option("versionAsOf", version).load(location)
        old.write.parquet(f"{request['out']}/{name}/v{version}")
        result["tables"][name] = {
            "schema": json.loads(latest.schema.json()),
            "old_schema": json.loads(old.schema.json()),
            "sql_count": spark.sql(f"SELECT count(*) AS n FROM rf_{name}").first().n,
            "sql_old_count": spark.sql(f"SELECT count(*) AS n FROM rf_{name} VERSION AS OF {version}").first().n,
            "history": sorted(r.version for r in spark.sql(f"DESCRIBE HISTORY rf_{name}").collect()),
        }
    result["per_topic"] = {r.topic: r.n for r in spark.sql(
        "SELECT topic, count(*) AS n FROM rf_commitlog GROUP BY topic").collect()}
    # docs/storage.md's SQL, as a Databricks user would run it
    result["docs_sql"] = []
    for statement in request["docs_sql"]:
        got = spark.sql(statement).collect()
        single = got[0][0] if len(got) == 1 and len(got[0]) == 1 else None
        result["docs_sql"].append([len(got), single])   # rows, and a lone value (a count)
    spark.stop()
    return result


if __name__ == "__main__":
    print(json.dumps(main(json.loads(sys.argv[1]))))
