"""``StoreTables``: the Delta tables of one store and what every store operation reads from them.

The operations (:mod:`.put`, :mod:`.dispatch`, :mod:`.retention`, :mod:`.import_job`,
:mod:`.topics`, :mod:`.offsets`, :mod:`.groups`) take a ``StoreTables`` and never import the
:class:`~rocketfilter.store.store.MessageStore` facade, which is a ``StoreTables`` itself.

The CommitLog commit is the truth; the ConsumeQueue is derived from it by dispatch, as RocketMQ's
reput service does. The small tables (topics, consumer offsets) are rewritten whole on each
change, with optimistic concurrency, since they hold one row per topic, per queue or per
consumer subscription.
"""
from __future__ import annotations

import os
import random
import re
from contextlib import contextmanager
from typing import Any, Dict, Optional

import pyarrow as pa
import pyarrow.parquet as pq
from pyarrow import fs as pafs

from rocketfilter.delta import object_store
from rocketfilter.config import BrokerConfig, MessageStoreConfig
from rocketfilter.delta.object_store import delta_uri
from rocketfilter.store import schema as S
from rocketfilter.delta.errors import UnreadableDataFile
from rocketfilter.delta.table import DamagedLogError, Table, TableMissingError
from rocketfilter.delta.write import filesystem_path
from rocketfilter.store.filter_data import ConsumerFilterManager
from rocketfilter.store.errors import StoreDamagedError, StoreNotFoundError
from rocketfilter.delta.retry import retry_on_conflict
from rocketfilter.store.state import (COMMITLOG_KEY, CONSUMEQUEUE_KEY, CommitLogState,
                                      ConsumeQueueState)


# How Spark (classic and Connect) reports a data file that vanished under a read.
_FILE_GONE = ("FileNotFoundException", "FILE_NOT_EXIST", "PATH_NOT_FOUND", "No such file or directory")


# Spark's error for a data file it cannot decode (corrupted bytes), naming the file.
_FAILED_READ = re.compile(r"FAILED_READ_FILE[^\]]*\] Encountered error while reading file "
                          r"(\S+?)\.?(?:\s|$)")
_CAUSE = re.compile(r"Caused by: ([\w.$]+(?:Exception|Error)[^\n]*)")


def _innermost_cause(text: str) -> str:
    """The last ``Caused by:`` line of a Java stack trace, shortened."""
    causes = _CAUSE.findall(text)
    return causes[-1].strip()[:200] if causes else ""


def normalize_store_uri(uri) -> str:
    """Local paths absolute (``~`` expanded), URIs as given; no trailing slash."""
    uri = os.fspath(uri)
    if "://" in uri:
        return delta_uri(uri).rstrip("/")  # s3a:// is s3:// to delta-rs and pyarrow
    return os.path.abspath(os.path.expanduser(uri)).rstrip("/") or "/"


def store_exists(uri, storage_options: Optional[dict] = None) -> bool:
    """Whether ``uri`` holds a rocketfilter store (its CommitLog table), without creating one."""
    from deltalake import DeltaTable

    uri = normalize_store_uri(uri)
    return DeltaTable.is_deltatable(f"{uri}/{S.COMMITLOG}", object_store.storage_options(uri, storage_options))


class StoreTables:
    """The Delta tables under ``uri`` (:data:`rocketfilter.store.schema.TABLES`), the store's
    settings and its high-water marks.

    ``create=False`` refuses a path that holds no store (a mistyped path) with
    :class:`~rocketfilter.store.errors.StoreNotFoundError` instead of making an empty one.
    """

    def __init__(self, uri: str, spark, config: MessageStoreConfig,
                 broker_config: Optional[BrokerConfig] = None,
                 storage_options: Optional[dict] = None, *, create: bool = True):
        self.uri = normalize_store_uri(uri)
        self.spark = spark
        self.config = config
        # DefaultMessageStore takes the BrokerConfig too: cluster name, store host, auto-create
        # and the bitmap switch live there.
        self.broker_config = broker_config or BrokerConfig()
        self.storage_options = object_store.storage_options(self.uri, storage_options)
        object_store.register(self.uri, self.storage_options)
        object_store.prepare_spark(spark, self.uri, self.storage_options)
        storage_options = self.storage_options
        self._check_commitlog_log()
        if not create and not store_exists(self.uri, storage_options):
            raise StoreNotFoundError(f"no rocketfilter store at {uri} (no {S.COMMITLOG} Delta table "
                                     "there); check the path, or create one with create=True")
        try:
            self.tables: Dict[str, Table] = {
                name: Table.open(f"{self.uri}/{name}", S.SCHEMAS[name],
                                 extra=S.EXTRA_COLUMNS.get(name),
                                 stats_columns=S.STATS_COLUMNS[name], storage_options=storage_options)
                for name in S.TABLES
            }
        except DamagedLogError as exc:
            raise StoreDamagedError(f"store {self.uri}: {exc}; restore it from a copy of the "
                                    "store: rocketfilter will not write on top of it") from None
        self._filter_manager = None
        self._check_not_behind()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.uri!r})"

    @property
    def commitlog(self) -> Table:
        return self.tables[S.COMMITLOG]

    @property
    def consumequeue(self) -> Table:
        return self.tables[S.CONSUMEQUEUE]

    # --- integrity ---------------------------------------------------------------------------

    def _check_commitlog_log(self) -> None:
        """StoreDamagedError when the CommitLog's log vanished but the store is there (data
        files, or a ConsumeQueue): opening would create an empty CommitLog and reuse offsets."""
        log = f"{self.uri}/{S.COMMITLOG}/_delta_log"
        fs, path = filesystem_path(log)
        if fs.get_file_info(path).type == pafs.FileType.Directory:
            return
        evidence = None
        from deltalake import DeltaTable

        if DeltaTable.is_deltatable(f"{self.uri}/{S.CONSUMEQUEUE}", self.storage_options):
            evidence = f"its {S.CONSUMEQUEUE} table is there"
        else:
            table_dir = path.rsplit("/", 1)[0]
            if fs.get_file_info(table_dir).type == pafs.FileType.Directory and any(
                    i.base_name.endswith(".parquet")
                    for i in fs.get_file_info(pafs.FileSelector(table_dir))):
                evidence = f"{S.COMMITLOG} data files are there"
        if evidence:
            raise StoreDamagedError(f"store {self.uri}: {S.COMMITLOG}/_delta_log is gone while "
                                    f"{evidence}; restore it from a copy of the store: rocketfilter "
                                    "will not start a new CommitLog over old offsets")

    def _check_not_behind(self) -> None:
        """StoreDamagedError when the CommitLog's log went backwards (its newest commits lost):
        the ConsumeQueue has dispatched past its end, or indexes queue offsets it never wrote."""
        commitlog, queue = self.commitlog_state(), self.consumequeue_state()
        behind = None
        if queue.dispatched > commitlog.next_commitlog_offset:
            behind = (f"the {S.CONSUMEQUEUE} has dispatched up to commit-log offset "
                      f"{queue.dispatched}, but the {S.COMMITLOG} ends at "
                      f"{commitlog.next_commitlog_offset}")
        else:
            for topic, queues in sorted(queue.queues.items()):
                for queue_id, (_, end) in sorted(queues.items()):
                    if end > commitlog.next_queue_offset(topic, queue_id):
                        behind = (f"{S.CONSUMEQUEUE} {topic}/{queue_id} ends at queue offset "
                                  f"{end}, past the {S.COMMITLOG}'s "
                                  f"{commitlog.next_queue_offset(topic, queue_id)}")
                        break
                if behind:
                    break
        if behind:
            version = self.commitlog.version()
            raise StoreDamagedError(
                f"store {self.uri}: the {S.COMMITLOG} log went backwards ({behind}; its newest "
                f"commit is {S.COMMITLOG}/_delta_log/{version:020d}.json): commits after it are "
                "lost; restore the store from a copy: rocketfilter will not reuse their offsets")

    def table(self, name: str) -> Table:
        """The table ``name`` refreshed to its latest version; StoreDamagedError when it is gone."""
        try:
            return self.tables[name].refresh()
        except DamagedLogError as exc:
            raise StoreDamagedError(f"store {self.uri}: {exc}") from None
        except TableMissingError as exc:
            raise StoreDamagedError(f"store {self.uri}: the {name} table is gone ({exc}); "
                                    "the store cannot be used") from None

    def check_files(self, *names: str) -> None:
        """Raise StoreDamagedError naming the first data file that the latest snapshot of a table
        (``names``, default all) lists but storage no longer has. Writers call it before they
        continue offsets, so a store that lost messages is never appended to."""
        for name in names or S.TABLES:
            missing = self.table(name).missing_files()
            if missing:
                raise StoreDamagedError(
                    f"store {self.uri}: the {name} table lost {len(missing)} data file(s) its Delta "
                    f"log still lists, e.g. {missing[0]}; restore them (or the whole store) "
                    "before using it")

    @contextmanager
    def reading(self, *names: str):
        """Run reads (Spark's or pyarrow's) of tables ``names`` (default all); when one fails
        because a data file is gone or cannot be decoded, raise StoreDamagedError naming it
        instead of the reader's error. Storage is listed only after such a failure, so the usual
        read pays nothing."""
        try:
            yield
        except Exception as exc:
            text = str(exc)
            # pyarrow's reads (single pulls) raise FileNotFoundError naming only the path.
            if isinstance(exc, FileNotFoundError) or any(sign in text for sign in _FILE_GONE):
                self.check_files(*names)
            if isinstance(exc, UnreadableDataFile):   # pyarrow's reads
                raise StoreDamagedError(f"store {self.uri}: {exc}; restore it (or the whole store) "
                                        "from a copy") from None
            unreadable = _FAILED_READ.search(text)
            if unreadable:
                cause = _innermost_cause(text)
                raise StoreDamagedError(
                    f"store {self.uri}: data file {unreadable.group(1)} cannot be read"
                    f"{': ' + cause if cause else ''}; restore it (or the whole store) from a "
                    "copy") from None
            raise

    # --- high-water marks --------------------------------------------------------------------

    def commitlog_state(self) -> CommitLogState:
        """The CommitLog's high-water marks as of its latest snapshot."""
        return CommitLogState.from_metadata(self.table(S.COMMITLOG).latest_metadata(COMMITLOG_KEY))

    def consumequeue_state(self) -> ConsumeQueueState:
        return ConsumeQueueState.from_metadata(
            self.table(S.CONSUMEQUEUE).latest_metadata(CONSUMEQUEUE_KEY))

    def get_max_offset_in_queue(self, topic: str, queue_id: int) -> int:
        """One past the queue's last dispatched entry (``maxOffsetInQueue``); 0 when empty."""
        found = self.consumequeue_state().offsets(topic, queue_id)
        return 0 if found is None else found[1]

    def get_min_offset_in_queue(self, topic: str, queue_id: int) -> int:
        found = self.consumequeue_state().offsets(topic, queue_id)
        return 0 if found is None else found[0]

    def promoted_properties(self) -> Dict[str, str]:
        """Property name -> CommitLog column, for the promoted properties (as of the loaded
        snapshot; see :mod:`.promoted`)."""
        from rocketfilter.store.promoted import promoted_properties

        return promoted_properties(self.commitlog.schema)

    # --- small tables --------------------------------------------------------------------------

    def read_small(self, name: str) -> pa.Table:
        """A small table's rows (topics, consumer offsets, consumer groups) read on the driver."""
        table = self.table(name)
        files = table.files()
        schema = S.arrow_schema(S.SCHEMAS[name])
        if not files:
            return schema.empty_table()
        located = [filesystem_path(f.path) for f in files]
        try:
            return pq.read_table([p for _, p in located], filesystem=located[0][0], schema=schema)
        except FileNotFoundError:
            self.check_files(name)
            raise

    def rewrite_small(self, name: str, update) -> Any:
        """Replace a small table's content by ``update(rows) -> (rows, result)`` in one commit."""
        def attempt():
            table = self.table(name)
            version = table.version()
            before = table.files()
            rows = self.read_small(name).to_pylist()
            rows, result = update(rows)
            arrow = pa.Table.from_pylist(rows, schema=S.arrow_schema(S.SCHEMAS[name]))
            adds = table.write_arrow(arrow) if rows else []
            table.commit(adds, before, expected_version=version, operation="MERGE")
            return result
        return retry_on_conflict(attempt, f"update of {name}")

    # --- config files kept with the store (consumerFilter.json and the like) -----------------

    def _config_path(self, name: str):
        filesystem, root = filesystem_path(self.uri)
        return filesystem, f"{root}/config/{name}"

    def read_config(self, name: str) -> Optional[str]:
        filesystem, path = self._config_path(name)
        if filesystem.get_file_info(path).type == pafs.FileType.NotFound:
            return None
        with filesystem.open_input_stream(path) as f:
            return f.read().decode("utf-8")

    def write_config(self, name: str, text: str) -> None:
        """Write through a temporary name, then move, so readers never see half a file."""
        filesystem, path = self._config_path(name)
        filesystem.create_dir(path.rsplit("/", 1)[0], recursive=True)
        tmp = f"{path}.tmp{random.randrange(1 << 30)}"
        with filesystem.open_output_stream(tmp) as f:
            f.write(text.encode("utf-8"))
        filesystem.move(tmp, path)

    @property
    def filter_manager(self):
        """The consumer groups' SQL92 filter data, persisted as ``config/consumerFilter.json``."""
        if self._filter_manager is None:
            self._filter_manager = ConsumerFilterManager.for_store(self)
        return self._filter_manager
