"""A moto S3 server on 127.0.0.1 and the settings that reach it, for the cluster and Delta tests.

Everything S3-specific these tests need is here, so that it can switch to the suite's shared S3
fixture and to ``get_spark``'s environment-variable path (issue 22, point 1) in one place:
:func:`aws_env` (what delta-rs, pyarrow and boto read), :func:`spark_s3_conf` (hadoop-aws on the
classpath and the ``fs.s3a.*`` settings, given explicitly) and :func:`storage_options` (for
rocketfilter's API).
"""
from __future__ import annotations

from typing import Dict

# The S3 tests' moto server and bucket helper, the package's hadoop-aws coordinates: one of each.
from rocketfilter.delta.object_store import hadoop_aws_package
from tests.s3.moto import _free_port as free_port, create_bucket, moto_server  # noqa: F401

ACCESS_KEY = "testing"
SECRET_KEY = "testing"
REGION = "us-east-1"


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
