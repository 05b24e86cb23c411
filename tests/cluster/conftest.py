"""Fixtures of the cluster tests: a moto S3 server and a Spark standalone cluster, both on
127.0.0.1, started once for the module and stopped by their PIDs."""
from __future__ import annotations

import os
import tarfile
from pathlib import Path

import pytest

from . import s3_local
from .standalone import Standalone

ROOT = Path(__file__).resolve().parents[2]
ARCHIVE = ROOT / "tests" / "data" / "rocketmq_store_sample.tar.xz"


@pytest.fixture(scope="module")
def s3_endpoint():
    pytest.importorskip("moto.server", reason="the S3 tests need pip install -e '.[test]' (moto[server])")
    with s3_local.moto_server() as endpoint:
        yield endpoint


@pytest.fixture(scope="module")
def standalone(tmp_path_factory):
    python_path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    cluster = Standalone(tmp_path_factory.mktemp("standalone"), python_path)
    try:
        yield cluster.start()
    finally:
        cluster.stop()


@pytest.fixture(scope="module")
def broker_store(tmp_path_factory) -> Path:
    """The real-format sample broker store (tests/data), unpacked."""
    target = tmp_path_factory.mktemp("broker_store")
    with tarfile.open(ARCHIVE) as tar:
        tar.extractall(target, filter="data")
    return target
