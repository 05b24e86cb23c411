"""``df.write.format("rocketmq")``: rows appended through ``put_messages`` and read back by the
source; the put's checks and errors, before any task (column types) or from the put itself (a
queue out of range), with nothing appended; append only; the streaming sink, exactly once across
a restart; the warm put server (rocketfilter.source.put_server) that every put here after the
first reuses, a killed one replaced, an idle one gone."""
from __future__ import annotations

import os

import pytest

import rocketfilter
from rocketfilter.store import MessageStore

SINK = "SinkTopic"


@pytest.fixture(scope="module")
def sink_store(spark, tmp_path_factory):
    store = MessageStore.open(str(tmp_path_factory.mktemp("sink") / "store"), spark)
    store.create_topic(SINK, read_queue_nums=2, write_queue_nums=2)
    return store


def _write(df, store, **options):
    writer = df.write.format("rocketmq").mode("append").option("store", store.uri)
    for k, v in options.items():
        writer = writer.option(k, v)
    writer.save()


def test_rows_are_appended_as_messages(spark, sink_store):
    rocketfilter.register(spark)
    df = spark.createDataFrame(
        [("ignored", f"Tag{i % 2}", [f"k{i}", "x"], {"n": str(i)}, f"body{i}", i % 2) for i in range(12)],
        "topic string, tags string, keys array<string>, properties map<string,string>, body string, queue_id int"
    ).repartition(3)
    _write(df, sink_store, topic=SINK)   # the option wins over the column
    got = rocketfilter.read(spark, sink_store.uri, SINK, "n > 5", "SQL92").collect()
    assert sorted(r.keys for r in got) == sorted(f"k{i} x" for i in range(6, 12))
    assert all(r.queue_id == int(r.properties["n"]) % 2 and r.body == f"body{r.properties['n']}".encode()
               and r.tags == f"Tag{int(r.properties['n']) % 2}" for r in got)
    assert sink_store.get_max_offset_in_queue(SINK, 0) + sink_store.get_max_offset_in_queue(SINK, 1) == 12
    assert sorted(r.queue_offset for r in rocketfilter.read(spark, sink_store.uri, SINK).collect()) == \
        sorted(list(range(6)) * 2)   # each queue's offsets 0..5, assigned once
    assert os.listdir(os.path.join(sink_store.uri, "_sink")) == []   # staged files removed


@pytest.mark.parametrize("make,message", [
    (lambda s: s.createDataFrame([(1,)], "x int"), "needs a 'topic' column"),
    (lambda s: s.createDataFrame([(SINK, "x")], "topic string, flag string"), "column 'flag' has type"),
    (lambda s: s.createDataFrame([(SINK, 5)], "topic string, queue_id int"), "queue_id 5 is outside 0..1"),
])
def test_the_put_checks_and_nothing_is_appended(spark, sink_store, make, message):
    rocketfilter.register(spark)
    before = sink_store.commitlog_state().next_commitlog_offset
    with pytest.raises(Exception) as info:
        _write(make(spark), sink_store)
    assert message in str(info.value)
    assert sink_store.commitlog_state().next_commitlog_offset == before


def test_append_only(spark, sink_store):
    rocketfilter.register(spark)
    df = spark.createDataFrame([("T",)], "tags string")
    with pytest.raises(Exception) as info:
        df.write.format("rocketmq").mode("overwrite").option("store", sink_store.uri).option("topic", SINK).save()
    assert "append-only" in str(info.value)


def test_an_error_of_the_put_process_is_the_writes_error(tmp_path):
    from rocketfilter.source.sink import put_staged

    with pytest.raises(RuntimeError) as info:
        put_staged(str(tmp_path / "gone"), [str(tmp_path / "part.parquet")], "T", None)
    assert "the put into" in str(info.value) and "no rocketfilter store at" in str(info.value)


def test_a_streaming_write_stores_each_micro_batch_once_across_restarts(spark, sink_store, tmp_path):
    """Issue 19 §6.7: writeStream.format("rocketmq") appends each micro-batch, exactly once: a
    batch Spark replays after a restart (its put landed, the checkpoint's commit did not) is not
    stored again, and the next batch continues the queue's offsets."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from rocketfilter.store import schema as S

    rocketfilter.register(spark)
    topic = "StreamSinkTopic"
    sink_store.create_topic(topic, read_queue_nums=1, write_queue_nums=1)
    source, checkpoint = tmp_path / "in", tmp_path / "checkpoint"
    source.mkdir()

    def arrive(name, keys):
        pq.write_table(pa.table({"keys": keys, "body": [f"b-{k}" for k in keys]}), source / name)

    def run():
        query = (spark.readStream.schema("keys string, body string").parquet(str(source))
                 .writeStream.format("rocketmq").option("store", sink_store.uri).option("topic", topic)
                 .option("checkpointLocation", str(checkpoint)).trigger(availableNow=True).start())
        query.awaitTermination()
        assert query.exception() is None
        return query.id

    def stored():
        return sorted((r.queue_offset, r.keys) for r in rocketfilter.read(spark, sink_store.uri, topic).collect())

    arrive("1.parquet", ["k0", "k1", "k2"])
    query_id = run()
    assert stored() == [(0, "k0"), (1, "k1"), (2, "k2")]
    for name in ("0", ".0.crc"):   # the crash: batch 0's put landed, its checkpoint commit did not
        (checkpoint / "commits" / name).unlink()
    assert run() == query_id   # the same query, which replays batch 0
    assert stored() == [(0, "k0"), (1, "k1"), (2, "k2")]
    arrive("2.parquet", ["k3", "k4"])
    run()
    assert stored() == [(i, f"k{i}") for i in range(5)]
    assert sink_store.table(S.COMMITLOG).transaction_version(f"rocketmq-sink-{query_id}") == 1


def _staged(tmp_path, name, keys):
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp_path / f"{name}.parquet"
    pq.write_table(pa.table({"keys": keys, "body": [f"b-{k}" for k in keys]}), path)
    return [str(path)]


def _gone(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] == "Z"   # exited, not yet reaped
    except FileNotFoundError:
        return True


def _wait_until(condition, what: str, limit: float = 600.0) -> None:
    """Waits on a condition (generously bounded: a loaded machine is slow, not wrong)."""
    import time

    deadline = time.monotonic() + limit
    while not condition():
        assert time.monotonic() < deadline, f"still waiting after {limit:.0f} s: {what}"
        time.sleep(0.2)


def test_puts_share_one_warm_put_server(spark, sink_store, tmp_path):
    from rocketfilter.source.sink import put_staged

    first = put_staged(sink_store.uri, _staged(tmp_path, "a", ["w0", "w1"]), SINK, None)
    second = put_staged(sink_store.uri, _staged(tmp_path, "b", ["w2"]), SINK, None)
    assert (first["messages"], second["messages"]) == (2, 1)
    assert first["server_pid"] == second["server_pid"]   # the second put started no process
    keys = {r.keys for r in rocketfilter.read(spark, sink_store.uri, SINK).collect()}
    assert {"w0", "w1", "w2"} <= keys


def test_a_killed_put_server_is_replaced_and_an_idle_one_exits(spark, sink_store, tmp_path, monkeypatch):
    import signal

    from rocketfilter.source import put_server
    from rocketfilter.source.sink import put_staged

    before = put_staged(sink_store.uri, _staged(tmp_path, "a", ["x0"]), SINK, None)["server_pid"]
    os.kill(before, signal.SIGKILL)   # its socket file stays behind
    _wait_until(lambda: _gone(before), "the killed server to exit")
    monkeypatch.setenv(put_server.IDLE_ENV, "1")   # the replacement idles out after a second
    after = put_staged(sink_store.uri, _staged(tmp_path, "b", ["x1"]), SINK, None)
    assert after["messages"] == 1 and after["server_pid"] != before
    _wait_until(lambda: _gone(after["server_pid"]), "the idle server to exit")
    assert not list(put_server._runtime_dir().glob(f"{put_server.server_key(sink_store.uri, dict(os.environ))}.sock"))
    keys = [r.keys for r in rocketfilter.read(spark, sink_store.uri, SINK).collect()]
    assert keys.count("x0") == keys.count("x1") == 1


@pytest.mark.parametrize("value,expected", [("", 120.0), ("0", 0.0), ("2.5", 2.5)])
def test_put_server_idle_seconds(value, expected):
    from rocketfilter.source.put_server import IDLE_ENV, idle_seconds

    assert idle_seconds({IDLE_ENV: value}) == expected


@pytest.mark.parametrize("value", ["soon", "-1"])
def test_a_bad_put_server_idle_time_names_the_variable(value):
    from rocketfilter.source.put_server import IDLE_ENV, idle_seconds

    with pytest.raises(ValueError, match=f"{IDLE_ENV}={value!r}"):
        idle_seconds({IDLE_ENV: value})


def test_put_server_files_gone_for_a_day_are_pruned(tmp_path):
    import time

    from rocketfilter.source.put_server import _prune

    day_old = time.time() - 2 * 86400
    for name in ("gone.log", "gone.lock", "live.log", "live.sock", "mine.log", "fresh.log"):
        (tmp_path / name).write_text("")
        if name != "fresh.log":
            os.utime(tmp_path / name, (day_old, day_old))
    _prune(tmp_path, keep="mine")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fresh.log", "live.log", "live.sock", "mine.log"]
