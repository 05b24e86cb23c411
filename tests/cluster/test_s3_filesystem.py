"""pyarrow's S3 filesystem, as rocketfilter's driver and executors open it, waits for a slow
S3-compatible endpoint as Spark's S3A and delta-rs do (the SDK's 3 s request timeout failed
the cluster test's reads from a moto server on a loaded machine)."""
from __future__ import annotations

from pyarrow import fs as pafs

from rocketfilter.delta.paths import S3_TIMEOUT_SECONDS, filesystem_path


def test_s3_paths_get_patient_timeouts_and_keep_the_endpoint(monkeypatch):
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    fs, path = filesystem_path("s3://bucket/store/commitlog/part-0.parquet")
    assert isinstance(fs, pafs.S3FileSystem) and path == "bucket/store/commitlog/part-0.parquet"
    options = fs.__reduce__()[1][0]
    assert options["request_timeout"] == options["connect_timeout"] == S3_TIMEOUT_SECONDS
    # The endpoint keeps its host and port, and plain http as the scheme.
    assert options["endpoint_override"].removeprefix("http://") == "127.0.0.1:9"
    assert options["scheme"] == "http"


def test_local_paths_are_untouched(tmp_path):
    fs, path = filesystem_path(f"file://{tmp_path}/a b.parquet")
    assert isinstance(fs, pafs.LocalFileSystem) and path == f"{tmp_path}/a b.parquet"
