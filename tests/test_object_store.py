"""rocketfilter.delta.object_store without S3 or Spark: URIs, options from the AWS environment and
their overrides, the refused settings, Spark's fs.s3a settings and the hadoop-aws package."""
from __future__ import annotations

import glob
import os

import pyspark
import pytest
from pyspark.sql import SparkSession

from rocketfilter.delta import object_store as O
from rocketfilter.conf_sources import spark_conf_items, storage_conf_items
from rocketfilter.config import load_broker_conf

ENV = {"AWS_ENDPOINT_URL": "http://127.0.0.1:9000", "AWS_ACCESS_KEY_ID": "id", "AWS_SECRET_ACCESS_KEY": "secret",
       "AWS_REGION": "eu-west-1", "AWS_ALLOW_HTTP": "true", "HOME": "/root"}


def test_uris_for_each_client():
    assert O.delta_uri("s3a://b/rf") == "s3://b/rf" and O.delta_uri("/tmp/x") == "/tmp/x"
    assert O.spark_uri("s3://b/rf") == "s3a://b/rf" and O.spark_uri("s3a://b/rf") == "s3a://b/rf"
    assert O.spark_uri("/tmp/rf") == "file:///tmp/rf" and O.spark_uri("abfss://c@a/rf") == "abfss://c@a/rf"


def test_the_environment_then_explicit_options_win():
    assert O.storage_options("s3://b/rf", env=ENV) == {k: v for k, v in ENV.items() if k != "HOME"}
    got = O.storage_options("s3a://b/rf", {"aws_endpoint": "https://minio:9000", "region": "us-east-1",
                                           "AWS_S3_LOCKING_PROVIDER": "x"}, env=ENV)
    assert got["AWS_ENDPOINT_URL"] == "https://minio:9000" and got["AWS_REGION"] == "us-east-1"
    assert got["AWS_ACCESS_KEY_ID"] == "id" and got["AWS_S3_LOCKING_PROVIDER"] == "x"
    assert O.storage_options("s3://b", env={"AWS_DEFAULT_REGION": "ap-south-1"}) == {"AWS_REGION": "ap-south-1"}
    # Not S3: what was given, nothing from the AWS environment.
    assert O.storage_options("/tmp/rf", env=ENV) is None
    assert O.storage_options("gs://b/rf", {"google_service_account": "k"}, env=ENV) == {"google_service_account": "k"}


@pytest.mark.parametrize("options,env", [
    ({"AWS_S3_ALLOW_UNSAFE_RENAME": "true"}, {}),
    ({}, {"AWS_S3_ALLOW_UNSAFE_RENAME": "TRUE"}),
    ({"aws_conditional_put": "disabled"}, {}),
])
def test_settings_that_let_two_writers_commit_one_version_are_refused(options, env):
    with pytest.raises(O.ObjectStoreConfigError, match="store s3://b/rf: .* two writers commit the same Delta version"):
        O.storage_options("s3://b/rf", options, env=env)
    assert O.storage_options("s3://b/rf", {"AWS_S3_ALLOW_UNSAFE_RENAME": "false"}, env={})


def test_s3a_settings_per_bucket():
    got = O.s3a_settings("s3://rf-bucket/store", O.storage_options("s3://rf-bucket/store", env=ENV))
    p = "fs.s3a.bucket.rf-bucket."
    assert got == {p + "endpoint": "http://127.0.0.1:9000", p + "path.style.access": "true",
                   p + "connection.ssl.enabled": "false", p + "access.key": "id", p + "secret.key": "secret",
                   p + "endpoint.region": "eu-west-1"}
    assert O.s3a_settings("s3://b/x", {"AWS_REGION": "us-east-1"}) == {"fs.s3a.bucket.b.endpoint.region": "us-east-1"}
    tokens = O.s3a_settings("s3://b/x", {"AWS_ACCESS_KEY_ID": "a", "AWS_SECRET_ACCESS_KEY": "s", "AWS_SESSION_TOKEN": "t"})
    assert tokens["fs.s3a.bucket.b.aws.credentials.provider"].endswith("TemporaryAWSCredentialsProvider")


def test_registered_options_are_found_for_the_files_under_a_store():
    O.register("s3a://reg-bucket/store", {"AWS_REGION": "sa-east-1"})
    assert O.options_for("s3a://reg-bucket/store/commitlog/part-0.parquet") == {"AWS_REGION": "sa-east-1"}
    fs, path = O.arrow_filesystem("s3a://reg-bucket/store/commitlog")
    assert path == "reg-bucket/store/commitlog" and fs.region == "sa-east-1"


def test_hadoop_aws_matches_pyspark_hadoop():
    jar = glob.glob(os.path.join(os.path.dirname(pyspark.__file__), "jars", "hadoop-client-api-*.jar"))[0]
    version = os.path.basename(jar)[len("hadoop-client-api-"):-len(".jar")]
    assert O.hadoop_aws_package() == f"org.apache.hadoop:hadoop-aws:{version}"


def test_which_sessions_get_hadoop_aws():
    assert O.needs_hadoop_aws("s3://b/rf", env={}) and O.needs_hadoop_aws("s3a://b/rf", env={})
    assert not O.needs_hadoop_aws("/tmp/rf", env=ENV)
    assert O.needs_hadoop_aws(None, env={"AWS_ENDPOINT_URL": "http://x"})
    assert not O.needs_hadoop_aws(None, env={})


def test_hadoop_aws_joins_the_packages_already_asked_for():
    from rocketfilter.session import _with_hadoop_aws

    builder = _with_hadoop_aws(SparkSession.Builder().config("spark.jars.packages", "io.x:y:1"), {})
    assert builder._options["spark.jars.packages"] == f"io.x:y:1,{O.hadoop_aws_package()}"
    own = SparkSession.Builder().config("spark.jars.packages", "org.apache.hadoop:hadoop-aws:3.4.1")
    assert _with_hadoop_aws(own, {})._options["spark.jars.packages"] == "org.apache.hadoop:hadoop-aws:3.4.1"


def test_storage_options_in_spark_conf_are_not_broker_settings():
    conf = {"spark.rocketfilter.storage.AWS_REGION": "eu-west-1", "spark.rocketfilter.brokerRole": "SLAVE"}
    assert storage_conf_items(conf) == {"AWS_REGION": "eu-west-1"}
    assert spark_conf_items(conf) == {"brokerRole": "SLAVE"}
    assert load_broker_conf(spark_conf=conf)[1].broker_role == "SLAVE"
