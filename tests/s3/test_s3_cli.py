"""The command line on an S3 store, set up by the AWS environment only (or overridden with
``--conf spark.rocketfilter.storage.<KEY>=...``): import a broker directory into S3 and replay a
topic, with the same output as on local disk."""
from __future__ import annotations

import tarfile
from pathlib import Path

import pytest

from rocketfilter.cli import main

ARCHIVE = Path(__file__).parent.parent / "data" / "rocketmq_store_sample.tar.xz"


@pytest.fixture(scope="module")
def broker(tmp_path_factory) -> str:
    target = tmp_path_factory.mktemp("broker-cli")
    with tarfile.open(ARCHIVE) as tar:
        tar.extractall(target, filter="data")
    return str(target)


def _run(capsys, argv, store):
    code = main(argv)
    out, err = capsys.readouterr()
    assert code == 0, err
    return out.replace(store, "<store>")


def test_import_and_replay_on_s3_as_on_disk(spark, s3_uri, broker, tmp_path, capsys, monkeypatch):
    local = str(tmp_path / "store")
    replay = ["replay", "--topic", "OrderEvents", "--tags", "*", "--max-msg-nums", "16"]
    outputs = []
    for store in (s3_uri, local):
        outputs.append([_run(capsys, ["import", "--store", store, "--source", broker], store),
                        _run(capsys, [*replay, "--store", store], store)])
    assert outputs[0] == outputs[1]
    assert outputs[0][0] and "delivered" in outputs[0][1]

    # An explicit storage option wins over the environment's (here: a dead endpoint).
    endpoint = __import__("os").environ["AWS_ENDPOINT_URL"]
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")
    again = _run(capsys, [*replay, "--store", s3_uri,
                          "--conf", f"spark.rocketfilter.storage.AWS_ENDPOINT_URL={endpoint}"], s3_uri)
    assert again == outputs[0][1]
