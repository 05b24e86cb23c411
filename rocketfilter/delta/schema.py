"""Comparing a Delta table's schema with the one expected, and evolving it on purpose.

A table's schema is its *base* (the columns rocketfilter always writes, in order) followed by
*extra* columns that a predicate accepts: the CommitLog's promoted properties and the
ConsumeQueue's subscription bits. Extra columns are added by a metadata-only Delta commit (a
``metaData`` action, which delta-rs writes with ``alter.add_columns``) on an exact version, so
nothing lands between the caller's check of the data and the schema change. Anything else that
differs is refused, naming the difference.

>>> base = StructType([StructField("a", LongType())])
>>> check_schema(StructType([StructField("a", LongType()), StructField("x", LongType())]), base,
...              lambda f: f.name == "x", "t").fieldNames()
['a', 'x']
"""
from __future__ import annotations

from typing import Any, Callable, Optional, Sequence

import pyarrow as pa
from pyspark.sql.types import ArrayType, DataType, LongType, MapType, StructField, StructType  # noqa: F401

from rocketfilter.delta.errors import COMMIT_ID_KEY, OPERATION_KEY, ConcurrentCommitError

ExtraColumns = Optional[Callable[[StructField], bool]]


class DeltaSchemaError(ValueError):
    """The table's schema is not the one the caller expects."""


def arrow_schema(spark_schema: StructType) -> pa.Schema:
    """The Arrow schema Spark's parquet writer produces for ``spark_schema``."""
    from pyspark.sql.pandas.types import to_arrow_schema

    return to_arrow_schema(spark_schema)


def _shape(dtype: DataType) -> Any:
    """Types and nullability without field metadata, for schema comparison."""
    if isinstance(dtype, StructType):
        return tuple((f.name, _shape(f.dataType), f.nullable) for f in dtype.fields)
    if isinstance(dtype, MapType):
        return ("map", _shape(dtype.keyType), _shape(dtype.valueType), dtype.valueContainsNull)
    if isinstance(dtype, ArrayType):
        return ("array", _shape(dtype.elementType), dtype.containsNull)
    return dtype.simpleString()


def _schema_diff(have: StructType, want: StructType) -> str:
    h, w = {f.name: f for f in have.fields}, {f.name: f for f in want.fields}
    out = [f"missing {sorted(set(w) - set(h))}"] if set(w) - set(h) else []
    out += [f"unexpected {sorted(set(h) - set(w))}"] if set(h) - set(w) else []
    fmt = lambda f: f.dataType.simpleString() + ("" if f.nullable else " not null")  # noqa: E731
    out += [f"{n}: table has {fmt(h[n])}, expected {fmt(w[n])}" for n in w
            if n in h and _shape(StructType([h[n]])) != _shape(StructType([w[n]]))]
    return "; ".join(out) or "column order differs"


def check_schema(found: StructType, base: StructType, extra: ExtraColumns, uri: str) -> StructType:
    """``found`` when it is ``base`` followed only by columns ``extra`` accepts (all nullable,
    so files written before them read as null); DeltaSchemaError naming the difference else."""
    n = len(base.fields)
    head, tail = StructType(found.fields[:n]), found.fields[n:]
    rejected = [f for f in tail if extra is None or not f.nullable or not extra(f)]
    if _shape(head) != _shape(base) or rejected:
        want = StructType(base.fields + [f for f in tail if f not in rejected])
        raise DeltaSchemaError(f"Delta table {uri}: schema mismatch: {_schema_diff(found, want)}")
    return found


def delta_fields(fields: Sequence[StructField]) -> list:
    """Spark fields (with their metadata) as delta-rs ``Field``\\ s for ``alter.add_columns``."""
    from deltalake import Schema

    return list(Schema.from_json(StructType(list(fields)).json()).fields)


def add_columns_at(table, fields: Sequence[StructField], expected_version: int,
                   operation: str) -> int:
    """Add nullable ``fields`` to ``table`` (a :class:`~rocketfilter.delta.table.Table`, whose
    ``extra`` must accept them) in a metadata-only commit on exactly ``expected_version`` (no
    retry); ConcurrentCommitError when another commit landed first. Files written before read
    the new columns as null. Returns the new version.

    >>> table.add_columns([StructField("sub_bits", LongType())], expected_version=table.version())  # doctest: +SKIP
    """
    import uuid

    from deltalake import CommitProperties
    from deltalake.exceptions import CommitFailedError

    table._check_writable()
    check_schema(StructType(table.schema.fields + list(fields)), table.base_schema, table.extra, table.uri)
    if table.version() != expected_version:
        table.refresh()
    if table.version() != expected_version:
        raise ConcurrentCommitError(table.uri, expected_version, table.version())
    meta = {COMMIT_ID_KEY: uuid.uuid4().hex, OPERATION_KEY: operation}
    try:
        table._dt.alter.add_columns(delta_fields(fields),
                                    commit_properties=CommitProperties(meta, max_commit_retries=0))
    except CommitFailedError as exc:
        table.refresh()
        raise ConcurrentCommitError(table.uri, expected_version, table.version(), str(exc)) from exc
    table.refresh()
    return expected_version + 1
