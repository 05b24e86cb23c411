"""The real-format sample broker store (tests/data), unpacked once per session, and its manifest."""
from __future__ import annotations

import json
import tarfile
from pathlib import Path
from typing import Dict

import pytest

ARCHIVE = Path(__file__).parent.parent / "data" / "rocketmq_store_sample.tar.xz"


@pytest.fixture(scope="session")
def sample(tmp_path_factory) -> Path:
    target = tmp_path_factory.getbasetemp() / "rocketmq_store_sample"
    if not (target / "manifest.jsonl").exists():
        with tarfile.open(ARCHIVE) as tar:
            tar.extractall(target, filter="data")
    return target


@pytest.fixture(scope="session")
def manifest(sample) -> Dict[str, list]:
    """The manifest's entries by kind (message, blank, cq_entry, commitlog_file, ...)."""
    kinds: Dict[str, list] = {}
    with open(sample / "manifest.jsonl", encoding="utf-8") as f:
        for line in f:
            entry = json.loads(line)
            kinds.setdefault(entry["kind"], []).append(entry)
    return kinds
