"""Docs that run: every Python block of README.md and docs/*.md, executed as written, in order, one
namespace per file, on the suite's SparkSession (``get_spark()`` in a block returns it).

A block promises output with comment lines that stand alone right after a line that prints
(``print(...)``): each such line must be a line the block printed. ``...`` in a promised line
stands for any text (as doctest's ELLIPSIS), and a trailing ``   (...)`` is commentary, not
output. Blocks about Spark Connect (they read ``SPARK_REMOTE``) run apart, on the suite's Connect
server, with the ``connect`` marker.
"""
from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path
from typing import Callable, Dict, List, Tuple

import pytest

REPO = Path(__file__).resolve().parents[1]
DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
_BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)


def python_blocks(doc: Path) -> List[Tuple[int, str]]:
    """``(line number, code)`` of each Python block, in order."""
    text = doc.read_text(encoding="utf-8")
    return [(text.count("\n", 0, m.start()) + 2, m.group(1)) for m in _BLOCK.finditer(text)]


def needs_connect(block: str) -> bool:
    return "SPARK_REMOTE" in block


def promised_output(block: str) -> List[str]:
    """The standalone comment lines that follow a printing line (or another promised line)."""
    promised, after_print = [], False
    for line in block.splitlines():
        stripped = line.strip()
        if stripped.startswith("# ") and after_print:
            promised.append(stripped[2:].split("   (")[0].rstrip())
            continue
        after_print = "print(" in line
    return promised


def shows(expected: str, printed: List[str]) -> bool:
    """Whether a printed line matches ``expected``, where ``...`` stands for any text."""
    if "..." not in expected:
        return expected in printed
    pattern = re.compile(".*?".join(re.escape(part) for part in expected.split("...")) + r"\Z", re.S)
    return any(pattern.match(line) for line in printed)


def _selector_columns(namespace: dict) -> None:
    """docs/selector.md's df and sel: to_columns' three Columns select on the df."""
    namespace["df"].select([c.alias(k) for k, c in namespace["sel"].to_columns().items()]).collect()


# Checks on a file's namespace after its blocks ran (kept from the per-file doc tests).
AFTER: Dict[str, Callable[[dict], None]] = {"selector.md": _selector_columns}


def _params() -> list:
    params = []
    for doc in DOCS:
        blocks = python_blocks(doc)
        if any(not needs_connect(b) for _, b in blocks):
            params.append(pytest.param(doc, False, id=doc.name))
        if any(needs_connect(b) for _, b in blocks):
            params.append(pytest.param(doc, True, id=f"{doc.name}-connect", marks=pytest.mark.connect))
    return params


@pytest.mark.parametrize("doc, connect", _params())
def test_python_blocks_run_as_written(doc: Path, connect: bool, spark, request, monkeypatch):
    monkeypatch.chdir(REPO)  # blocks name files as a checkout's root sees them (conf/broker.conf)
    if connect:
        request.getfixturevalue("connect_spark")
        monkeypatch.setenv("SPARK_REMOTE", request.getfixturevalue("connect_server"))
    namespace: dict = {"__name__": f"doc_{doc.stem.replace('-', '_')}"}
    ran = 0
    for line, block in python_blocks(doc):
        if needs_connect(block) != connect:
            continue
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            exec(compile(block, f"{doc.relative_to(REPO)}:{line}", "exec"), namespace)
        shown = printed.getvalue().splitlines()
        for expected in promised_output(block):
            assert shows(expected, shown), f"{doc.name}:{line} promises {expected!r}; it printed {shown}"
        ran += 1
    assert ran
    if not connect and doc.name in AFTER:
        AFTER[doc.name](namespace)


def test_the_docs_have_their_blocks():
    counts = {doc.name: len(python_blocks(doc)) for doc in DOCS}
    assert counts["README.md"] >= 4 and counts["selector.md"] >= 4 and counts["consumer-groups.md"] >= 6
    assert counts["offsets.md"] >= 4 and counts["configuration.md"] >= 4 and counts["why.md"] >= 3
    assert counts["source.md"] >= 4


def test_the_output_rules():
    block = "x = 1\nprint(x)\n# 1\n# 2   (commentary)\ny = 2  # not output\n# not output either\n"
    assert promised_output(block) == ["1", "2"]
    assert shows("col 1: a ... b", ["col 1: a long b"]) and not shows("col 1: a ... b", ["col 1: a b c"])
    assert shows("exact", ["exact"]) and not shows("exact", ["exactly"])


def test_docs_cite_no_files_users_do_not_have():
    """The spec and the conformance generator live outside the package: docs say what users
    need instead of pointing there."""
    for doc in DOCS:
        text = doc.read_text(encoding="utf-8")
        assert "../shared" not in text and "SEMANTICS.md" not in text, doc.name
        assert not re.search(r"§\d", text), f"{doc.name} cites spec sections users do not have"

