"""A broker store's listing names what is wrong where it is (issue 19 §6.8): a directory in
place of a commit-log file is named as such, and a missing file in the middle is named by the
name it should have, not reported under the next file's name. Listing only: no Spark."""
from __future__ import annotations

from pyarrow import fs as pafs

from rocketfilter.broker_files.import_listing import list_commitlog, list_consumequeue

SIZE = 100


def _commitlog(root, starts):
    (root / "commitlog").mkdir(parents=True)
    for start in starts:
        (root / "commitlog" / f"{start:020d}").write_bytes(b"\0" * SIZE)


def test_a_missing_middle_file_is_named(tmp_path):
    _commitlog(tmp_path, [0, 200, 300])
    damage = []
    list_commitlog(pafs.LocalFileSystem(), str(tmp_path), damage)
    assert [(d.file, d.byte_offset) for d in damage] == [(f"commitlog/{100:020d}", 0)]
    assert "missing" in damage[0].reason and f"{200:020d}" not in damage[0].file


def test_a_directory_in_place_of_a_commitlog_file_is_named(tmp_path):
    _commitlog(tmp_path, [0, 200])
    (tmp_path / "commitlog" / f"{100:020d}").mkdir()
    damage = []
    found = list_commitlog(pafs.LocalFileSystem(), str(tmp_path), damage)
    assert [f[0] for f in found] == [f"commitlog/{0:020d}", f"commitlog/{200:020d}"]
    assert [(d.file, d.reason) for d in damage] == [
        (f"commitlog/{100:020d}", "a directory, not a commit-log file as a broker writes")]


def test_a_missing_middle_consume_queue_file_is_named(tmp_path):
    queue = tmp_path / "consumequeue" / "T" / "0"
    queue.mkdir(parents=True)
    for start in (0, 2 * SIZE):
        (queue / f"{start:020d}").write_bytes(b"\0" * SIZE)
    damage = []
    list_consumequeue(pafs.LocalFileSystem(), str(tmp_path), damage)
    assert [d.file for d in damage] == [f"consumequeue/T/0/{SIZE:020d}"]
