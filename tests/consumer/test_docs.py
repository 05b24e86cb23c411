"""Every Python block of docs/consumer-groups.md runs as written, and prints what the doc says."""
from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[2] / "docs" / "consumer-groups.md"
BLOCKS = re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)


def documented_output(block: str) -> list:
    """The block's comment lines that stand alone: the output the doc promises (a trailing
    "   (...)" is commentary)."""
    return [line.strip()[2:].split("   (")[0] for line in block.splitlines() if line.strip().startswith("# ")]


@pytest.mark.parametrize("block", BLOCKS, ids=[f"block{i}" for i in range(len(BLOCKS))])
def test_doc_block_runs(block, request):
    if "MessageStore" in block:
        request.getfixturevalue("spark")   # the suite's session, which the block's store then uses
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(block, str(DOC), "exec"), {})
    shown = printed.getvalue().splitlines()
    for expected in documented_output(block):
        assert expected in shown, f"the doc promises {expected!r}; the block printed {shown}"


def test_the_doc_has_its_blocks():
    assert len(BLOCKS) >= 6
