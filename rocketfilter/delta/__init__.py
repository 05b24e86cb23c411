"""Delta tables over delta-rs with Spark's parquet: snapshots, pruned reads, executor writes with
driver commits, file statistics, schema evolution and conflict retry (docs/architecture.md).

Generic plumbing: nothing here knows RocketMQ, and nothing here imports the rest of rocketfilter.
"""
