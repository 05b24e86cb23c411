"""Listing a RocketMQ broker's store directory on the driver: names and sizes only.

A broker writes plain files in plain directories, so anything else under ``commitlog/`` or
``consumequeue/`` is damage, reported like a misnamed file and never followed: a symbolic link
(to a directory or a file, a loop included), a file named other than by its 20-digit offset, a
queue directory whose name is not a queue id.
"""
from __future__ import annotations

import os
import re
from collections import Counter, defaultdict
from dataclasses import dataclass
from typing import Dict, List, Sequence, Tuple

from pyarrow import fs as pafs

from rocketfilter.broker_files.import_parse import _filesystem
from rocketfilter.broker_files.records import StoreFormatError

FILE_NAME = re.compile(r"^[0-9]{20}$")
CQ_UNIT = 20
# (name relative to the store root, absolute path, start offset in the name, size in bytes)
Listed = Tuple[str, str, int, int]


@dataclass(frozen=True)
class Damage:
    """One problem found in the store: file (relative to the store root), byte offset, reason."""

    file: str
    byte_offset: int
    reason: str

    def error(self) -> StoreFormatError:
        return StoreFormatError(self.file, self.byte_offset, self.reason)


def _rel(root: str, path: str) -> str:
    return path[len(root):].lstrip("/")


def _walk_local(directory: str, recursive: bool) -> Tuple[List[Tuple[str, int]], List[str]]:
    """(files as (path, size), symbolic links) below ``directory``, never following a link."""
    files, links = [], []
    stack = [directory]
    while stack:
        with os.scandir(stack.pop()) as entries:
            for entry in entries:
                if entry.name.startswith("."):
                    continue
                if entry.is_symlink():
                    links.append(entry.path)
                elif entry.is_dir(follow_symlinks=False):
                    if recursive:
                        stack.append(entry.path)
                elif entry.is_file(follow_symlinks=False):
                    files.append((entry.path, entry.stat(follow_symlinks=False).st_size))
    return files, links


def list_files(filesystem, directory: str, recursive: bool) -> Tuple[List[Tuple[str, int]], List[str]]:
    """Files (path, size) below ``directory`` and the symbolic links found there. Object stores
    have no links; a local directory is walked without following any."""
    if isinstance(filesystem, pafs.LocalFileSystem):
        return _walk_local(directory, recursive)
    infos = filesystem.get_file_info(pafs.FileSelector(directory, recursive=recursive))
    return [(i.path, i.size) for i in infos
            if i.type == pafs.FileType.File and not i.base_name.startswith(".")], []


def _link_damage(root: str, links: Sequence[str], damage: List[Damage]) -> None:
    for path in links:
        damage.append(Damage(_rel(root, path), 0, "a symbolic link, not a plain file or directory as "
                                                  "a broker writes; not followed"))


def contiguity(files: Sequence[Tuple[str, int, int]], what: str, damage: List[Damage]) -> None:
    """Check (rel name, start, size) files sorted by start: equal sizes, no gaps or overlaps."""
    if not files:
        return
    mapped = Counter(size for _, _, size in files).most_common(1)[0][0]
    for i, (name, start, size) in enumerate(files):
        if size != mapped:
            damage.append(Damage(name, min(size, mapped),
                                 f"{what} file is {size} bytes; the others are {mapped}"))
        if i and start != files[i - 1][1] + mapped:
            prev = files[i - 1][1]
            if start > prev + mapped:  # a gap: name the first file that should be there
                gone = (start - prev) // mapped - 1
                missing = f"{name.rsplit('/', 1)[0]}/{prev + mapped:020d}"
                damage.append(Damage(missing, 0, f"{what} file missing: the file at {prev} is "
                                                 f"followed by the one at {start}"
                                                 + (f" ({gone} files of {mapped} bytes gone)"
                                                    if gone > 1 else "")))
            else:
                damage.append(Damage(name, 0, f"{what} file starts at {start}, expected "
                                              f"{prev + mapped} right after the file at {prev}"))


def _directories(filesystem, directory: str) -> List[str]:
    """The directories right under ``directory`` (a broker keeps none under ``commitlog/``)."""
    infos = filesystem.get_file_info(pafs.FileSelector(directory))
    return [i.path for i in infos
            if i.type == pafs.FileType.Directory and not i.base_name.startswith(".")]


def list_commitlog(filesystem, root: str, damage: List[Damage]) -> List[Listed]:
    """The commit-log files in offset order; damage for misnamed files, directories, links and
    gaps (a missing file is named by the name it should have)."""
    files, links = list_files(filesystem, f"{root}/commitlog", recursive=False)
    _link_damage(root, links, damage)
    in_place = set()
    for path in _directories(filesystem, f"{root}/commitlog"):
        if path in links:
            continue
        in_place.add(_rel(root, path))
        damage.append(Damage(_rel(root, path), 0,
                             "a directory, not a commit-log file as a broker writes"))
    found: List[Listed] = []
    for path, size in files:
        name, base = _rel(root, path), path.rsplit("/", 1)[-1]
        if not FILE_NAME.match(base):
            damage.append(Damage(name, 0, "not a commit-log file name (20 digits)"))
            continue
        found.append((name, path, int(base), size))
    found.sort(key=lambda f: f[2])
    gaps: List[Damage] = []
    contiguity([(n, s, z) for n, _, s, z in found], "commit-log", gaps)
    damage.extend(d for d in gaps if d.file not in in_place)  # a directory there is named already
    return found


def list_consumequeue(filesystem, root: str, damage: List[Damage]) -> Dict[Tuple[str, int], List[Listed]]:
    """Each queue's files (``consumequeue/<topic>/<queueId>/<offset>``) in offset order."""
    queues: Dict[Tuple[str, int], List[Listed]] = defaultdict(list)
    cq_dir = f"{root}/consumequeue"
    if filesystem.get_file_info(cq_dir).type != pafs.FileType.Directory:
        return queues
    files, links = list_files(filesystem, cq_dir, recursive=True)
    _link_damage(root, links, damage)
    for path, size in files:
        name = _rel(root, path)
        parts = name.split("/")
        if len(parts) != 4 or not parts[2].isdigit() or not FILE_NAME.match(parts[3]):
            damage.append(Damage(name, 0, "not a consumequeue/<topic>/<queueId>/<20-digit offset> file"))
            continue
        queues[(parts[1], int(parts[2]))].append((name, path, int(parts[3]), size))
    for listed in queues.values():
        listed.sort(key=lambda f: f[2])
        contiguity([(n, s, z) for n, _, s, z in listed], "consume-queue", damage)
        for name, _, _, size in listed:
            if size % CQ_UNIT:
                damage.append(Damage(name, size - size % CQ_UNIT,
                                     "file size is not a multiple of the 20-byte unit"))
    return queues


def require_store_dir(path: str):
    """``(filesystem, root)`` of a broker store; FileNotFoundError unless it has ``commitlog/``."""
    filesystem, root = _filesystem(path)
    if filesystem.get_file_info(f"{root}/commitlog").type != pafs.FileType.Directory:
        raise FileNotFoundError(f"{path}: no commitlog directory; is this a RocketMQ broker store?")
    return filesystem, root
