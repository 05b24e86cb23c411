"""Where a table's files are: the pyarrow filesystem and path for a URI."""
from __future__ import annotations

from typing import Tuple

from pyarrow import fs as pafs


def filesystem_path(uri: str) -> Tuple[pafs.FileSystem, str]:
    """The pyarrow filesystem and path for a table or file URI, including ``file://`` ones that
    Spark spells unencoded (``pafs.FileSystem.from_uri`` rejects a space in them).

    >>> filesystem_path("file:///tmp/a b/part-0.parquet")[1]
    '/tmp/a b/part-0.parquet'
    """
    if uri.startswith("file://"):
        return pafs.LocalFileSystem(), uri[len("file://"):]
    if "://" not in uri:
        return pafs.LocalFileSystem(), uri
    from rocketfilter.delta.object_store import arrow_filesystem

    # With the options registered for its store (or the environment's).
    fs, path = arrow_filesystem(uri)
    return _patient(fs), path


# The AWS SDK's own request timeout (3 s, which pyarrow keeps) fails reads from a busy
# S3-compatible endpoint or on a loaded machine that Spark's S3A and delta-rs wait out.
S3_TIMEOUT_SECONDS = 120.0


def _patient(fs: pafs.FileSystem) -> pafs.FileSystem:
    """``fs`` with the S3 connect and request timeouts raised to :data:`S3_TIMEOUT_SECONDS`
    where they were left to the SDK; every other setting as ``from_uri`` resolved it."""
    if not isinstance(fs, pafs.S3FileSystem):
        return fs
    rebuild, (options,) = fs.__reduce__()
    if options.get("request_timeout", 0) >= 0 and options.get("connect_timeout", 0) >= 0:
        return fs
    options = dict(options)
    for key in ("request_timeout", "connect_timeout"):
        if options.get(key, -1) < 0:
            options[key] = S3_TIMEOUT_SECONDS
    return rebuild(options)
