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
    return pafs.FileSystem.from_uri(uri)
