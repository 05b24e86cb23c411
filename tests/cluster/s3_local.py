"""A moto S3 server on 127.0.0.1 and the settings that reach it, for the cluster and Delta tests.

Everything S3-specific these tests need is here, so that it can switch to the suite's shared S3
fixture and to ``get_spark``'s environment-variable path (issue 22, point 1) in one place:
:func:`aws_env` (what delta-rs, pyarrow and boto read), :func:`spark_s3_conf` (hadoop-aws on the
classpath and the ``fs.s3a.*`` settings, given explicitly) and :func:`storage_options` (for
rocketfilter's API).
"""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import urllib.request
from contextlib import contextmanager
from typing import Dict, Iterator

import pyspark

ACCESS_KEY = "testing"
SECRET_KEY = "testing"
REGION = "us-east-1"


def free_port() -> int:
    """A port nothing listens on now (the OS's pick for port 0)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def hadoop_version() -> str:
    """The Hadoop version of pyspark's own jars (hadoop-aws must match it exactly)."""
    jars = os.path.join(os.path.dirname(pyspark.__file__), "jars")
    for name in os.listdir(jars):
        if name.startswith("hadoop-client-api-") and name.endswith(".jar"):
            return name[len("hadoop-client-api-"):-len(".jar")]
    raise RuntimeError(f"no hadoop-client-api jar in {jars}")


def hadoop_aws_package() -> str:
    return f"org.apache.hadoop:hadoop-aws:{hadoop_version()}"


def aws_env(endpoint: str) -> Dict[str, str]:
    """The standard AWS variables for ``endpoint`` (delta-rs, pyarrow and boto3 read them)."""
    return {"AWS_ENDPOINT_URL": endpoint, "AWS_ACCESS_KEY_ID": ACCESS_KEY,
            "AWS_SECRET_ACCESS_KEY": SECRET_KEY, "AWS_REGION": REGION,
            "AWS_DEFAULT_REGION": REGION, "AWS_ALLOW_HTTP": "true", "AWS_EC2_METADATA_DISABLED": "true"}


def storage_options(endpoint: str) -> Dict[str, str]:
    """delta-rs storage options for ``endpoint``, given explicitly to rocketfilter's API."""
    return {"AWS_ENDPOINT_URL": endpoint, "AWS_ACCESS_KEY_ID": ACCESS_KEY,
            "AWS_SECRET_ACCESS_KEY": SECRET_KEY, "AWS_REGION": REGION, "AWS_ALLOW_HTTP": "true"}


def spark_s3_conf(endpoint: str) -> Dict[str, str]:
    """Session settings for ``s3://`` and ``s3a://`` paths on ``endpoint`` through hadoop-aws
    (fetched by Ivy from Maven Central at session start), and the AWS variables for the
    executors' Python workers (which write parquet through pyarrow)."""
    conf = {
        "spark.jars.packages": hadoop_aws_package(),
        "spark.hadoop.fs.s3.impl": "org.apache.hadoop.fs.s3a.S3AFileSystem",
        "spark.hadoop.fs.s3a.endpoint": endpoint,
        "spark.hadoop.fs.s3a.endpoint.region": REGION,
        "spark.hadoop.fs.s3a.path.style.access": "true",
        "spark.hadoop.fs.s3a.connection.ssl.enabled": "false",
        "spark.hadoop.fs.s3a.access.key": ACCESS_KEY,
        "spark.hadoop.fs.s3a.secret.key": SECRET_KEY,
        "spark.hadoop.fs.s3a.aws.credentials.provider":
            "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider",
    }
    conf.update({f"spark.executorEnv.{k}": v for k, v in aws_env(endpoint).items()})
    return conf


@contextmanager
def moto_server() -> Iterator[str]:
    """A moto S3 server on a free port of 127.0.0.1; yields its endpoint URL. Ready once it
    answers an HTTP request; stopped by its PID."""
    port = free_port()
    endpoint = f"http://127.0.0.1:{port}"
    # Its log goes to a file: it logs every request, and a pipe nobody reads fills and blocks it.
    log = tempfile.TemporaryFile()
    process = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                               stdout=log, stderr=subprocess.STDOUT)
    try:
        while True:
            if process.poll() is not None:
                log.seek(0)
                raise RuntimeError(f"moto server exited: {log.read().decode(errors='replace')[-2000:]}")
            try:
                urllib.request.urlopen(f"{endpoint}/moto-api/", timeout=5).close()
                break
            except OSError:
                try:
                    process.wait(timeout=0.2)  # the server's exit, or a short pause before retrying
                except subprocess.TimeoutExpired:
                    pass
        yield endpoint
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()


def create_bucket(endpoint: str, bucket: str) -> None:
    import boto3

    boto3.client("s3", endpoint_url=endpoint, aws_access_key_id=ACCESS_KEY,
                 aws_secret_access_key=SECRET_KEY, region_name=REGION).create_bucket(Bucket=bucket)
