"""S3 fixtures: one moto S3 server for this directory's tests (``tests/s3/moto.py``), with the standard AWS
environment variables pointing at it, as a user sets them up. The suite's shared SparkSession
has hadoop-aws on its classpath whenever tests in this directory are collected (tests/conftest.py).
"""
from __future__ import annotations

import os
import uuid

import pytest

from tests.s3.moto import aws_env, create_bucket, moto_server

BUCKET = "rocketfilter-tests"


@pytest.fixture(scope="package")
def s3_endpoint():
    """The endpoint URL of a moto server on 127.0.0.1 holding bucket ``BUCKET``; the AWS
    variables are set in this process's environment while the tests of this directory run
    (package scope: the rest of the suite never sees them)."""
    pytest.importorskip("moto.server", reason="the S3 tests need pip install -e '.[test]' (moto[server])")
    with moto_server() as endpoint:
        env = aws_env(endpoint)
        saved = {k: os.environ.get(k) for k in env}
        os.environ.update(env)
        try:
            create_bucket(endpoint, BUCKET)
            yield endpoint
        finally:
            for key, value in saved.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value


@pytest.fixture
def s3_uri(s3_endpoint):
    """A fresh store URI in the bucket, per test."""
    return f"s3://{BUCKET}/{uuid.uuid4().hex[:12]}"
