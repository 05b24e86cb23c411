"""The health of a Delta table's ``_delta_log``, checked before delta-rs reads it.

delta-rs opens an emptied commit file as a commit with no actions, and answers a truncated or
garbage one with a multi-line Rust error naming no file. A table whose log lost its newest
commits looks like an older version of itself. These checks name the file instead; what the
log's owner recorded elsewhere (the store's other tables) decides whether a log went backwards.
"""
from __future__ import annotations

import json
from typing import List, Optional, Tuple

from pyarrow import fs as pafs

from rocketfilter.delta import write as delta_write


class DamagedLogError(RuntimeError):
    """A commit file of the table's ``_delta_log`` is empty or not JSON; the message names it."""

    def __init__(self, uri: str, file: str, why: str):
        self.uri, self.file = uri, file
        super().__init__(f"Delta table {uri}: {file} is damaged ({why})")


def _commit_files(uri: str) -> List[Tuple[str, int]]:
    """``(path, size)`` of each JSON commit in the table's ``_delta_log``, oldest first ([] when
    the log directory is absent)."""
    fs, path = delta_write.filesystem_path(f"{uri}/_delta_log")
    if fs.get_file_info(path).type != pafs.FileType.Directory:
        return []
    infos = fs.get_file_info(pafs.FileSelector(path))
    commits = [(i.path, i.size or 0) for i in infos
               if i.type == pafs.FileType.File and i.base_name.endswith(".json")
               and i.base_name[:-5].isdigit()]
    return sorted(commits, key=lambda c: int(c[0].rsplit("/", 1)[-1][:-5]))


def _unreadable(uri: str, path: str) -> Optional[str]:
    """Why the commit at ``path`` is not a Delta commit (JSON actions, one a line), or None."""
    fs, _ = delta_write.filesystem_path(uri)
    with fs.open_input_stream(path) as f:
        raw = f.read()
    if not raw.strip():
        return "it is empty"
    try:
        lines = raw.decode("utf-8").splitlines()
        actions = [json.loads(line) for line in lines if line.strip()]
    except (UnicodeDecodeError, ValueError) as exc:
        return f"not JSON: {str(exc).splitlines()[0][:120]}"
    if not all(isinstance(a, dict) and len(a) == 1 for a in actions):
        return "not Delta actions"
    return None


def _shown(uri: str, path: str) -> str:
    """The file as the table's directory name and the log's file name."""
    table = uri.rstrip("/").rsplit("/", 1)[-1]
    return f"{table}/_delta_log/{path.rsplit('/', 1)[-1]}"


def check_log(uri: str, thorough: bool = False) -> None:
    """Raise DamagedLogError for an empty commit file (one listing), or, ``thorough``, for any
    commit file that is not JSON (reads each: for after delta-rs failed). The newest commit is
    always read: it is the one a crash or a bad copy truncates."""
    commits = _commit_files(uri)
    for path, size in commits:
        if size == 0:
            raise DamagedLogError(uri, _shown(uri, path), "it is empty")
    for path, _ in (reversed(commits) if thorough else commits[-1:]):
        why = _unreadable(uri, path)
        if why:
            raise DamagedLogError(uri, _shown(uri, path), why)


def explain_failure(uri: str, exc: BaseException) -> DamagedLogError:
    """A one-line error for delta-rs failing to read the log: the damaged file when one is,
    else delta-rs's first line."""
    try:
        check_log(uri, thorough=True)
    except DamagedLogError as found:
        return found
    first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:300]
    return DamagedLogError(uri, "_delta_log", f"delta-rs cannot read it: {first}")
