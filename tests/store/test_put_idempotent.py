"""``put_messages(..., app_transaction=(app_id, version))``: a put recorded once per version, as
Delta's txnAppId/txnVersion, which the streaming sink's exactly-once rests on (issue 19 §6.7)."""
from __future__ import annotations

from rocketfilter.store import MessageStore
from rocketfilter.store import put as put_module
from rocketfilter.store import schema as S


def _messages(*bodies):
    return [{"topic": "T", "body": b} for b in bodies]


def test_a_version_is_stored_once_and_an_older_one_never(spark, tmp_path):
    store = MessageStore.open(str(tmp_path / "s"), spark)
    store.create_topic("T", read_queue_nums=1, write_queue_nums=1)
    assert [r["queue_offset"] for r in store.put_messages(_messages("a", "b"), app_transaction=("app", 1))] == [0, 1]
    assert store.put_messages(_messages("a", "b"), app_transaction=("app", 1)) == []
    assert store.put_messages(_messages("z"), app_transaction=("app", 0)) == []
    assert store.put_messages(spark.createDataFrame([("T", "c")], "topic string, body string"),
                              app_transaction=("app", 2)).count() == 1
    assert store.put_messages(_messages("d"), app_transaction=("other", 1))[0]["queue_offset"] == 3
    assert store.get_max_offset_in_queue("T", 0) == 4
    table = store.table(S.COMMITLOG)
    assert (table.transaction_version("app"), table.transaction_version("other")) == (2, 1)


def test_a_transaction_that_lands_while_the_put_is_prepared_is_not_stored_again(spark, tmp_path,
                                                                                 monkeypatch):
    """The check before the put's jobs can pass while a concurrent put of the same transaction is
    landing: the check against the snapshot the commit is made on still refuses it."""
    store = MessageStore.open(str(tmp_path / "s"), spark)
    store.create_topic("T", read_queue_nums=1, write_queue_nums=1)
    store.put_messages(_messages("a"), app_transaction=("app", 5))
    real, calls = put_module._already_put, []

    def stale_first(tables, txn):
        calls.append(txn)
        return False if len(calls) == 1 else real(tables, txn)
    monkeypatch.setattr(put_module, "_already_put", stale_first)
    assert store.put_messages(_messages("a"), app_transaction=("app", 5)) == []
    assert len(calls) == 2 and store.get_max_offset_in_queue("T", 0) == 1
