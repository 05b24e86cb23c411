"""Staged rows of ``format("rocketmq")`` writes (``_sink/<write id>/part-*.parquet``) that no
write will commit: a write killed between its tasks and its commit leaves them for good.

Nothing records which writes are alive, so age decides: a folder where nothing changed for
``max_age_hours`` (a day by default; a write's tasks and its commit are minutes apart) is
abandoned. A live write keeps touching its folder while its tasks write.
"""
from __future__ import annotations

import logging
import time
from typing import List, Optional

from pyarrow import fs as pafs

from rocketfilter.delta.write import filesystem_path

STAGING = "_sink"
MAX_AGE_HOURS = 24.0

log = logging.getLogger(__name__)


def _newest_change(fs: pafs.FileSystem, folder: pafs.FileInfo) -> float:
    """The newest modification time (epoch seconds) of ``folder`` and the files in it."""
    infos = fs.get_file_info(pafs.FileSelector(folder.path, recursive=True))
    times = [i.mtime.timestamp() for i in [folder, *infos] if i.mtime is not None]
    return max(times, default=time.time())


def clean_abandoned_staging(tables, max_age_hours: float = MAX_AGE_HOURS,
                            now: Optional[float] = None) -> List[str]:
    """Delete the store's staging folders unchanged for ``max_age_hours``; return them as
    ``_sink/<id>`` (oldest first is not promised). One listing when there is nothing to do."""
    fs, root = filesystem_path(f"{tables.uri}/{STAGING}")
    if fs.get_file_info(root).type != pafs.FileType.Directory:
        return []
    now = time.time() if now is None else now
    removed = []
    for folder in fs.get_file_info(pafs.FileSelector(root)):
        if folder.type != pafs.FileType.Directory:
            continue
        if now - _newest_change(fs, folder) < max_age_hours * 3600:
            continue
        try:
            fs.delete_dir(folder.path)
        except (FileNotFoundError, OSError):
            continue   # removed by another process meanwhile
        removed.append(f"{STAGING}/{folder.base_name}")
    if removed:
        log.info("store %s: removed %d abandoned write staging folder(s): %s",
                 tables.uri, len(removed), ", ".join(removed))
    return removed
