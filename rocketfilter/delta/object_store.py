"""Where a store lives: a local directory, or an S3 (or S3-compatible) bucket set up the way AWS
tools are, from the standard environment variables.

Three clients touch a store and each spells S3 its own way; this module keeps them agreeing:

* delta-rs (the Delta log) takes ``s3://`` and storage options such as ``AWS_ENDPOINT_URL``;
* pyarrow (data files, on the driver and in Python tasks) takes an ``S3FileSystem``;
* Spark reads ``s3a://`` through hadoop-aws, configured by ``fs.s3a.*`` settings.

A store's options are the environment's (``AWS_ENDPOINT_URL``, ``AWS_ACCESS_KEY_ID``,
``AWS_SECRET_ACCESS_KEY``, ``AWS_SESSION_TOKEN``, ``AWS_REGION``, ``AWS_ALLOW_HTTP``) overridden
by explicit ``storage_options``. Commits on S3 rely on conditional writes (``If-None-Match``),
which delta-rs 1.x uses; a setting that would give two writers the same version is refused.

>>> delta_uri("s3a://bucket/rf"), spark_uri("s3://bucket/rf"), spark_uri("/tmp/rf")
('s3://bucket/rf', 's3a://bucket/rf', 'file:///tmp/rf')
>>> storage_options("s3://bucket/rf", {"aws_region": "eu-west-1"}, env={})
{'AWS_REGION': 'eu-west-1'}
"""
from __future__ import annotations

import glob
import os
import threading
from typing import Dict, Mapping, Optional, Tuple

import pyarrow.fs as pafs

__all__ = ["ObjectStoreConfigError", "HadoopAwsMissingError", "is_s3", "delta_uri", "spark_uri",
           "storage_options", "register", "options_for", "arrow_filesystem", "s3a_settings",
           "prepare_spark", "hadoop_aws_package", "needs_hadoop_aws"]

S3_SCHEMES = ("s3://", "s3a://")

# Canonical option -> the environment variables it comes from, first found wins.
_ENV: Dict[str, Tuple[str, ...]] = {
    "AWS_ENDPOINT_URL": ("AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL"),
    "AWS_ACCESS_KEY_ID": ("AWS_ACCESS_KEY_ID",),
    "AWS_SECRET_ACCESS_KEY": ("AWS_SECRET_ACCESS_KEY",),
    "AWS_SESSION_TOKEN": ("AWS_SESSION_TOKEN",),
    "AWS_REGION": ("AWS_REGION", "AWS_DEFAULT_REGION"),
    "AWS_ALLOW_HTTP": ("AWS_ALLOW_HTTP",),
}
# The spellings delta-rs (object_store) accepts for them, lower case.
_ALIASES: Dict[str, str] = {
    **{a: "AWS_ENDPOINT_URL" for a in ("aws_endpoint_url", "aws_endpoint", "endpoint_url", "endpoint",
                                       "aws_endpoint_url_s3")},
    **{a: "AWS_ACCESS_KEY_ID" for a in ("aws_access_key_id", "access_key_id")},
    **{a: "AWS_SECRET_ACCESS_KEY" for a in ("aws_secret_access_key", "secret_access_key")},
    **{a: "AWS_SESSION_TOKEN" for a in ("aws_session_token", "session_token", "token", "aws_token")},
    **{a: "AWS_REGION" for a in ("aws_region", "region", "aws_default_region", "default_region")},
    **{a: "AWS_ALLOW_HTTP" for a in ("aws_allow_http", "allow_http")},
}
# Settings under which two writers could both commit one Delta version.
_UNSAFE = {
    "aws_s3_allow_unsafe_rename": lambda v: v.lower() == "true",
    "aws_conditional_put": lambda v: v.lower() == "disabled",
    "conditional_put": lambda v: v.lower() == "disabled",
}


class ObjectStoreConfigError(ValueError):
    """Storage options that rocketfilter refuses (they would let two writers corrupt a store)."""


class HadoopAwsMissingError(RuntimeError):
    """The running Spark session cannot read ``s3a://``: hadoop-aws is not on its classpath."""


def is_s3(uri) -> bool:
    return str(uri).startswith(S3_SCHEMES)


def delta_uri(uri: str) -> str:
    """``uri`` as delta-rs and pyarrow take it: ``s3a://`` becomes ``s3://``."""
    return "s3://" + uri[len("s3a://"):] if uri.startswith("s3a://") else uri


def spark_uri(uri: str) -> str:
    """``uri`` as Spark reads it: ``s3://`` becomes ``s3a://``, a local path ``file://``."""
    if uri.startswith("s3://"):
        return "s3a://" + uri[len("s3://"):]
    return uri if "://" in uri else "file://" + uri


def _truthy(value) -> bool:
    return str(value).strip().lower() in ("true", "1", "yes")


def storage_options(uri: str, explicit: Optional[Mapping] = None, *,
                    env: Optional[Mapping[str, str]] = None) -> Optional[dict]:
    """The storage options a store at ``uri`` is opened with: for S3, the AWS environment
    variables overridden by ``explicit`` (spelled as delta-rs takes them, keys canonicalised);
    elsewhere ``explicit`` as given. ObjectStoreConfigError for an unsafe commit setting.

    >>> storage_options("s3://b/rf", {"endpoint": "http://127.0.0.1:9000"}, env={"AWS_REGION": "x"})
    {'AWS_REGION': 'x', 'AWS_ENDPOINT_URL': 'http://127.0.0.1:9000'}
    """
    env = os.environ if env is None else env
    explicit = {str(k): str(v) for k, v in (explicit or {}).items()}
    if not is_s3(uri):
        return explicit or None
    resolved: Dict[str, str] = {}
    for key, names in _ENV.items():
        found = next((env[n] for n in names if env.get(n)), None)
        if found is not None:
            resolved[key] = found
    for key, value in explicit.items():
        resolved[_ALIASES.get(key.lower(), key)] = value
    _check_safe(uri, resolved, env)
    return resolved


def _check_safe(uri: str, options: Mapping[str, str], env: Mapping[str, str]) -> None:
    found = {k.lower(): (v, f"storage option {k}") for k, v in env.items() if k.lower() in _UNSAFE}
    found.update({k.lower(): (v, f"storage option {k}") for k, v in options.items() if k.lower() in _UNSAFE})
    for key, (value, where) in found.items():
        if _UNSAFE[key](value):
            raise ObjectStoreConfigError(
                f"store {uri}: {where}={value} would let two writers commit the same Delta version "
                "and lose messages; rocketfilter commits on S3 with conditional writes "
                "(If-None-Match, delta-rs 1.x): remove the setting")


# --- the options each process knows, by store root ------------------------------------------
_REGISTERED: Dict[str, dict] = {}
_LOCK = threading.Lock()


def register(uri: str, options: Optional[Mapping]) -> None:
    """Remember ``options`` for the files under ``uri`` in this process (the driver when a store
    opens, a Python task from what its closure carries), for :func:`options_for`."""
    if options and is_s3(uri):
        with _LOCK:
            _REGISTERED[delta_uri(uri).rstrip("/")] = dict(options)


def options_for(uri: str) -> Optional[dict]:
    """The options registered for the longest store root holding ``uri``, else the environment's."""
    uri = delta_uri(uri)
    with _LOCK:
        roots = [r for r in _REGISTERED if uri == r or uri.startswith(r + "/")]
        if roots:
            return dict(_REGISTERED[max(roots, key=len)])
    return storage_options(uri)


_FILESYSTEMS: Dict[tuple, pafs.FileSystem] = {}


def arrow_filesystem(uri: str, options: Optional[Mapping] = None) -> Tuple[pafs.FileSystem, str]:
    """The pyarrow filesystem and path for an object-store ``uri`` (``options`` default to
    :func:`options_for`). Local paths are the caller's business.

    >>> arrow_filesystem("s3a://bucket/rf/commitlog", {"AWS_REGION": "us-east-1"})[1]
    'bucket/rf/commitlog'
    """
    uri = delta_uri(uri)
    if not is_s3(uri):
        return pafs.FileSystem.from_uri(uri)
    options = options_for(uri) if options is None else options
    key = tuple(sorted((options or {}).items()))
    fs = _FILESYSTEMS.get(key)
    if fs is None:
        fs = _FILESYSTEMS[key] = _s3_filesystem(options or {})
    return fs, uri[len("s3://"):].rstrip("/")


def _s3_filesystem(options: Mapping[str, str]) -> pafs.S3FileSystem:
    endpoint = options.get("AWS_ENDPOINT_URL")
    kwargs = {}
    if endpoint:
        scheme, _, host = endpoint.partition("://") if "://" in endpoint else ("https", "", endpoint)
        kwargs.update(endpoint_override=host.rstrip("/"), scheme=scheme)
    if options.get("AWS_ACCESS_KEY_ID"):
        kwargs.update(access_key=options["AWS_ACCESS_KEY_ID"],
                      secret_key=options.get("AWS_SECRET_ACCESS_KEY"),
                      session_token=options.get("AWS_SESSION_TOKEN"))
    # Delayed open: a file under the part size is one PutObject instead of a multipart upload.
    return pafs.S3FileSystem(region=options.get("AWS_REGION"), allow_delayed_open=True, **kwargs)


# --- Spark: hadoop-aws and fs.s3a.* --------------------------------------------------------

def s3a_settings(uri: str, options: Optional[Mapping[str, str]]) -> Dict[str, str]:
    """The ``fs.s3a.bucket.<bucket>.*`` settings that let Spark read the store at ``uri`` as
    ``options`` describe it (per bucket, so stores on different endpoints coexist).

    >>> s3a_settings("s3://rf/x", {"AWS_ENDPOINT_URL": "http://127.0.0.1:9000"})
    {'fs.s3a.bucket.rf.endpoint': 'http://127.0.0.1:9000', 'fs.s3a.bucket.rf.path.style.access': 'true', \
'fs.s3a.bucket.rf.connection.ssl.enabled': 'false'}
    """
    options = options or {}
    bucket = delta_uri(uri)[len("s3://"):].split("/", 1)[0]
    p = f"fs.s3a.bucket.{bucket}."
    out: Dict[str, str] = {}
    endpoint = options.get("AWS_ENDPOINT_URL")
    if endpoint:
        # A custom endpoint (MinIO, R2, moto) rarely serves virtual-hosted bucket names.
        out[p + "endpoint"] = endpoint
        out[p + "path.style.access"] = str(not _truthy(options.get("AWS_VIRTUAL_HOSTED_STYLE_REQUEST",
                                                                   "false"))).lower()
        if endpoint.startswith("http://"):
            out[p + "connection.ssl.enabled"] = "false"
    if options.get("AWS_ACCESS_KEY_ID"):
        out[p + "access.key"] = options["AWS_ACCESS_KEY_ID"]
        out[p + "secret.key"] = options.get("AWS_SECRET_ACCESS_KEY", "")
        if options.get("AWS_SESSION_TOKEN"):
            out[p + "session.token"] = options["AWS_SESSION_TOKEN"]
            out[p + "aws.credentials.provider"] = \
                "org.apache.hadoop.fs.s3a.TemporaryAWSCredentialsProvider"
    if options.get("AWS_REGION"):
        out[p + "endpoint.region"] = options["AWS_REGION"]
    return out


_PREPARED: Dict[tuple, bool] = {}


def prepare_spark(spark, uri: str, options: Optional[Mapping[str, str]]) -> None:
    """Make ``spark`` able to read the S3 store at ``uri``: check that hadoop-aws is on its
    classpath (HadoopAwsMissingError otherwise) and set the bucket's ``fs.s3a.*`` settings on
    the session (they reach the executors with each scan). Nothing for other stores."""
    if spark is None or not is_s3(uri):
        return
    settings = s3a_settings(uri, options)
    key = (id(spark), tuple(sorted(settings.items())))
    if _PREPARED.get(key):
        return
    if not is_connect_session(spark):
        _check_hadoop_aws(spark, uri)
    for name, value in settings.items():
        spark.conf.set(name, value)
    _PREPARED[key] = True


def _check_hadoop_aws(spark, uri: str) -> None:
    try:
        jvm = spark.sparkContext._jvm
        loader = jvm.java.lang.Thread.currentThread().getContextClassLoader()
        jvm.java.lang.Class.forName("org.apache.hadoop.fs.s3a.S3AFileSystem", False, loader)
    except Exception:  # noqa: BLE001 - any failure to load the class means the same
        raise HadoopAwsMissingError(
            f"store {uri}: this Spark session cannot read s3a:// (hadoop-aws is not on its "
            f"classpath), and jars cannot be added to a running session; start it with "
            f"get_spark(store={uri!r}) or spark.jars.packages={hadoop_aws_package()}") from None


def hadoop_version() -> str:
    """The Hadoop version pyspark bundles (its ``jars/hadoop-client-api-<version>.jar``)."""
    import importlib.util

    # pyspark's own directory (located, not imported: the broker-file readers use this module
    # without Spark), or Spark's home when pyspark is imported from a zip (a worker).
    spec = importlib.util.find_spec("pyspark")
    origin = spec.origin if spec and spec.origin else ""
    homes = [os.path.dirname(origin), os.environ.get("SPARK_HOME")]
    jars = [j for home in homes if home for j in glob.glob(os.path.join(home, "jars", "hadoop-client-api-*.jar"))]
    if not jars:
        raise HadoopAwsMissingError("cannot tell pyspark's Hadoop version: no "
                                    "hadoop-client-api-*.jar in pyspark's jars directory")
    return os.path.basename(jars[0])[len("hadoop-client-api-"):-len(".jar")]


def hadoop_aws_package() -> str:
    """The Maven coordinates of the hadoop-aws that matches pyspark's Hadoop."""
    return f"org.apache.hadoop:hadoop-aws:{hadoop_version()}"


def needs_hadoop_aws(store: Optional[str], env: Optional[Mapping[str, str]] = None) -> bool:
    """Whether a session started for ``store`` needs hadoop-aws: an S3 store, or, when the store
    is not known yet, an environment set up for S3 (``AWS_ENDPOINT_URL`` or
    ``AWS_ACCESS_KEY_ID``)."""
    env = os.environ if env is None else env
    if store is not None:
        return is_s3(str(store))
    return any(env.get(n) for n in ("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "AWS_ACCESS_KEY_ID"))


def is_connect_session(spark) -> bool:
    """Whether ``spark`` is a Spark Connect session (rocketfilter.spark_mode's test, repeated:
    this package imports nothing of rocketfilter)."""
    return any(cls.__module__.startswith("pyspark.sql.connect") for cls in type(spark).__mro__)
