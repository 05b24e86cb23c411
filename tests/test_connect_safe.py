"""The data paths stay Spark Connect safe: no SparkContext, JVM or RDD access in the delta, broker_files,
store, pull, groups, selector, consumer and jobs packages and the top-level modules they use, except where ALLOWED
says why it is safe.

Classic-only questions (default parallelism, the JVM's classes) go through
rocketfilter/spark_mode.py or rocketfilter/session.py, which check for Connect first.
"""
from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "rocketfilter"
CHECKED = ("delta", "broker_files", "store", "pull", "groups", "selector", "consumer", "jobs")
# Top-level modules the data paths import (spark_mode and session ask "classic or Connect?").
CHECKED_MODULES = ("bloom.py", "checks.py", "conf_sources.py", "config.py", "functions.py", "javalang.py",
                   "message.py", "naming.py", "offsets_spec.py", "spark_progress.py", "tags.py")
# Attribute names that only exist on classic sessions, DataFrames and SparkContext.
CLASSIC_ONLY = {"sparkContext", "_jvm", "_jsc", "_jsparkSession", "_jdf", "_jcol", "rdd",
                "_active_spark_context"}
# (path under rocketfilter/, enclosing function's qualified name) -> why the access is safe there.
ALLOWED = {
    ("delta/table.py", "delta_spark_available"):
        "returns False for a Connect session before the guarded JVM probe",
    ("delta/object_store.py", "_check_hadoop_aws"):
        "called only when not is_connect_session(spark) (prepare_spark): a Connect server has its own classpath",
    ("spark_progress.py", "_JobGroupPoller.__init__"):
        "the classic watcher: spark_progress builds _ConnectHandler instead when is_connect(spark)",
}


def _violations(relative: str, source: str) -> list:
    """``file:line: .attr in function`` (qualified: ``Class.method``) for each classic-only access
    outside ALLOWED."""
    found = []

    def visit(node: ast.AST, function: str) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            function = f"{function}.{node.name}" if function else node.name
        if isinstance(node, ast.Attribute) and node.attr in CLASSIC_ONLY:
            if (relative, function) not in ALLOWED:
                found.append(f"rocketfilter/{relative}:{node.lineno}: .{node.attr} in {function or 'module'}")
        for child in ast.iter_child_nodes(node):
            visit(child, function)

    visit(ast.parse(source, filename=relative), "")
    return found


def _definitions(tree: ast.AST, prefix: str = ""):
    """(qualified name, node) of every function and class in ``tree``."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            name = f"{prefix}.{node.name}" if prefix else node.name
            yield name, node
            yield from _definitions(node, name)
        else:
            yield from _definitions(node, prefix)


def test_data_paths_use_no_classic_only_attributes():
    files = [f for folder in CHECKED for f in sorted((PACKAGE / folder).rglob("*.py"))]
    files += [PACKAGE / name for name in CHECKED_MODULES]
    assert any(f.parent.name == "store" for f in files)  # the scan found the code
    violations = [v for f in files
                  for v in _violations(f.relative_to(PACKAGE).as_posix(), f.read_text(encoding="utf-8"))]
    assert not violations, "classic-only Spark access on a data path:\n" + "\n".join(violations)


def test_the_allow_list_is_still_needed():
    """Each allowed place still has such an access: a stale entry would hide a new one."""
    for (relative, function), why in ALLOWED.items():
        tree = ast.parse((PACKAGE / relative).read_text(encoding="utf-8"))
        functions = [n for name, n in _definitions(tree) if name == function]
        assert functions and why, (relative, function)
        assert any(isinstance(n, ast.Attribute) and n.attr in CLASSIC_ONLY
                   for f in functions for n in ast.walk(f)), (relative, function)


def test_the_check_catches_each_form():
    """The scan is real: each forbidden form in a sample module is reported, and the allow-list
    only covers its own function."""
    source = ("def f(spark, df):\n    spark.sparkContext.defaultParallelism\n    spark._jvm\n    df.rdd\n"
              "    SparkContext._active_spark_context\n    spark._jsc\n"
              "def delta_spark_available(spark):\n    return spark.sparkContext._jvm\n"
              "class Poller:\n    def __init__(self, spark):\n        self.sc = spark.sparkContext\n")
    found = [line.split(": ", 1)[1] for line in _violations("store/sample.py", source)]
    assert found == [".sparkContext in f", "._jvm in f", ".rdd in f", "._active_spark_context in f",
                     "._jsc in f", "._jvm in delta_spark_available", ".sparkContext in delta_spark_available",
                     ".sparkContext in Poller.__init__"]
    assert _violations("delta/table.py", source.split("def delta_spark_available")[0]) != []
    allowed = "def delta_spark_available(spark):\n    return spark.sparkContext._jvm\n"
    assert _violations("delta/table.py", allowed) == []
