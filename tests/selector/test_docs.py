"""Every python block of docs/selector.md runs as written, in order, in one namespace."""
from __future__ import annotations

import re
from pathlib import Path

DOC = Path(__file__).resolve().parents[2] / "docs" / "selector.md"


def test_python_blocks_run(spark):
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)
    assert len(blocks) >= 4
    namespace: dict = {}
    for i, block in enumerate(blocks):
        exec(compile(block, f"{DOC.name}[python block {i}]", "exec"), namespace)
    namespace["df"].select([c.alias(k) for k, c in namespace["sel"].to_columns().items()]).collect()
