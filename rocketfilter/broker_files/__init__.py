"""A RocketMQ broker's store directory byte for byte: commit-log records, consume-queue units,
message bodies, ``config/*.json``, listing and damage (docs/architecture.md).

No Spark: these modules read and write bytes (through ``pyarrow.fs`` for object stores), so a
parse task or a tool can use them without a session. :mod:`rocketfilter.store` drives them.
"""
