"""What goes wrong with a Delta table, and the keys a commit carries to find itself again.

Kept apart from :mod:`.table` so that schema evolution and the retry loop, which
:mod:`.table` uses, can raise and catch them without importing it.
"""
from __future__ import annotations

COMMIT_ID_KEY = "rocketfilter.commitId"      # finds our own commit after delta-rs retried it
OPERATION_KEY = "rocketfilter.operation"     # delta-rs always logs operation WRITE


class DeltaFeatureError(RuntimeError):
    """The table uses a Delta feature rocketfilter would read or write wrong."""

    def __init__(self, uri: str, feature: str, detail: str = ""):
        self.uri, self.feature = uri, feature
        super().__init__(f"Delta table {uri} uses {feature}{detail}, which rocketfilter's raw "
                         "parquet access would get wrong; use the delta-spark connector for it")


class ConcurrentCommitError(RuntimeError):
    """Another commit landed after ``expected_version``: re-read the table and redo the work."""

    def __init__(self, uri: str, expected_version: int, actual_version: int, why: str = "",
                 gone: frozenset = frozenset()):
        self.uri, self.expected_version, self.actual_version = uri, expected_version, actual_version
        self.gone = gone  # paths to remove that another commit removed first
        super().__init__(f"Delta table {uri}: expected version {expected_version}, but the table "
                         f"is at version {actual_version}{': ' + why if why else ''}")


class TableMissingError(FileNotFoundError):
    """The table's ``_delta_log`` is gone (the directory was deleted under an open table)."""

    def __init__(self, uri: str):
        self.uri = uri
        super().__init__(f"Delta table {uri} is gone: its _delta_log directory no longer exists")


class UnreadableDataFile(OSError):
    """A data file pyarrow cannot decode (corrupted bytes): names the file, unlike pyarrow."""

    def __init__(self, path: str, cause: BaseException):
        self.path, self.cause = path, cause
        super().__init__(f"data file {path} cannot be read: {' '.join(str(cause).split())}")
