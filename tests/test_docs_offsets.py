"""Every Python block of docs/offsets.md runs as written, in order, and prints what the doc says."""
from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

DOC = Path(__file__).resolve().parents[1] / "docs" / "offsets.md"
BLOCKS = re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)


def documented_output(block: str) -> list:
    """The block's comment lines that stand alone: the output it promises."""
    return [line.strip()[2:] for line in block.splitlines() if line.strip().startswith("# ")]


def test_the_blocks_run_in_order_and_print_what_they_promise(spark):
    namespace: dict = {}
    assert len(BLOCKS) >= 4
    for i, block in enumerate(BLOCKS):
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            exec(compile(block, f"{DOC}#block{i}", "exec"), namespace)
        shown = printed.getvalue().splitlines()
        for expected in documented_output(block):
            assert expected in shown, f"block {i} promises {expected!r}; it printed {shown}"
