"""Which kind of Column ``pyspark.sql.functions`` builds, switched for a block.

pyspark decides by the process-wide ``SPARK_CONNECT_MODE_ENABLED`` (``connect_spark`` in
tests/conftest.py sets it for a test): a classic DataFrame needs classic Columns, a Connect one
Connect Columns. The Connect tests run the same call in both modes to compare the answers.
"""
from __future__ import annotations

import os
from contextlib import contextmanager

VARIABLE = "SPARK_CONNECT_MODE_ENABLED"


@contextmanager
def connect_mode(on: bool):
    """Within the block, Connect Columns when ``on``, classic ones otherwise; restored after."""
    saved = os.environ.get(VARIABLE)
    if on:
        os.environ[VARIABLE] = "1"
    else:
        os.environ.pop(VARIABLE, None)
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop(VARIABLE, None)
        else:
            os.environ[VARIABLE] = saved


def classic_mode():
    return connect_mode(False)
