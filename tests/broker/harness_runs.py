"""The CI scenarios' harness run, shared by tests/broker/conftest.py (which starts it in the
background as soon as the broker tests are collected) and the ``broker_runs`` fixture (which waits
for it). The harness keeps about one core busy for a few minutes; started early, it runs while the
rest of the suite does, and the broker tests, ordered last, find its outputs ready."""
from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Dict, Optional, Tuple

from tests.broker import run_scenario
from tests.broker.scenarios import ci_seeds, scenario

# ROCKETFILTER_BROKER_SEEDS="3,4" runs only those seeds (any seed draws a scenario).
SEEDS = ([int(s) for s in os.environ["ROCKETFILTER_BROKER_SEEDS"].split(",")]
         if os.environ.get("ROCKETFILTER_BROKER_SEEDS") else ci_seeds())


class _State:
    root: Optional[Path] = None
    temporary = False
    outputs: Dict[int, Tuple[dict, Path]] = {}
    batch: Optional[run_scenario.Batch] = None
    error: Optional[Exception] = None


def can_run() -> bool:
    return shutil.which("java") is not None and shutil.which("mvn") is not None


def start() -> None:
    """Write the scenario files and start the harness on those without complete outputs (once)."""
    if _State.root is not None or not can_run():
        return
    # ROCKETFILTER_BROKER_RUNS=DIR keeps the broker's outputs there and reuses the complete ones
    # (for working on rocketfilter's side without rerunning the broker).
    keep = os.environ.get("ROCKETFILTER_BROKER_RUNS")
    _State.temporary = not keep
    root = _State.root = Path(keep) if keep else Path(tempfile.mkdtemp(prefix="rf-broker-"))
    root.mkdir(parents=True, exist_ok=True)
    todo = []
    for seed in SEEDS:
        spec = scenario(seed)
        path, out = root / f"scenario-{seed:03d}.json", root / f"out-{seed:03d}"
        text = json.dumps(spec)
        if not (keep and path.exists() and path.read_text() == text and (out / "groups.jsonl").exists()):
            path.write_text(text)
            todo.append((str(path), str(out)))
        _State.outputs[seed] = (spec, out)
    if todo:
        try:
            _State.batch = run_scenario.start(todo)
        except run_scenario.HarnessError as error:   # raised by the fixture, not at collection
            _State.error = error


def outputs() -> Dict[int, Tuple[dict, Path]]:
    """seed -> (scenario, outdir), once the harness has run every scenario."""
    start()
    if _State.error is not None:
        raise _State.error
    if _State.batch is not None:
        batch, _State.batch = _State.batch, None
        try:
            batch.wait()
        except run_scenario.HarnessError as error:
            _State.error = error
            raise
    return _State.outputs


def stop() -> None:
    """Kill a harness still running (a session that ended early) and remove the temporary outputs."""
    if _State.batch is not None:
        _State.batch.kill()
        _State.batch = None
    if _State.temporary and _State.root is not None:
        shutil.rmtree(_State.root, ignore_errors=True)
