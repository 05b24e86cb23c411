"""Run scenarios against a real RocketMQ 5.3.3 broker (the Maven harness next to this file).

    python tests/broker/run_scenario.py SCENARIO.json OUTDIR
    python tests/broker/run_scenario.py --batch S1.json OUT1 S2.json OUT2 ...   (one JVM for all)

Builds the harness with Maven when needed (offline once the first build has downloaded), then runs
it. Each OUTDIR gets ``store/`` (the broker's store root: commitlog/, consumequeue/, config/),
``deliveries.jsonl``, ``pulls.jsonl``, ``time_queries.jsonl`` and ``sent.jsonl`` (each message of
the scenario: where it went, its msg_id and store time). The scenario format is in
../../docs/broker-harness.md.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import List, Sequence, Tuple

HARNESS_DIR = Path(__file__).resolve().parent
TARGET = HARNESS_DIR / "target"
MAIN_CLASS = "rocketfilter.harness.Harness"


class HarnessError(RuntimeError):
    """The harness could not be built, or a scenario failed (the message says which and why)."""


def _newest_source() -> float:
    files = [HARNESS_DIR / "pom.xml", *(HARNESS_DIR / "src").rglob("*.java")]
    return max(f.stat().st_mtime for f in files)


def is_built() -> bool:
    """True when target/ holds classes and a classpath newer than every source file."""
    stamp = TARGET / "classpath.txt"
    return stamp.exists() and (TARGET / "classes").is_dir() and stamp.stat().st_mtime >= _newest_source()


def build() -> None:
    """``mvn package``: offline first; online only when the local repository lacks something."""
    if shutil.which("mvn") is None:
        raise HarnessError("run_scenario: mvn is not on PATH (the harness needs Maven 3.8 and Java 17)")
    base = ["mvn", "-q", "-B", "-f", str(HARNESS_DIR / "pom.xml"), "package"]
    for cmd in (base[:1] + ["-o"] + base[1:], base):
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode == 0:
            (TARGET / "classpath.txt").touch()
            return
    raise HarnessError(f"run_scenario: the harness does not build ({' '.join(base)}):\n{(r.stdout + r.stderr)[-3000:]}")


def ensure_built() -> None:
    if not is_built():
        build()


class Batch:
    """A harness JVM running (scenario file, outdir) pairs, each on a fresh broker."""

    def __init__(self, pairs: Sequence[Tuple[str, str]]):
        ensure_built()
        self.pairs = list(pairs)
        classpath = f"{TARGET / 'classes'}{os.pathsep}{(TARGET / 'classpath.txt').read_text().strip()}"
        self._home = tempfile.TemporaryDirectory(prefix="rf-harness-home-")
        home = self._home.name
        batch = Path(home) / "batch.tsv"
        batch.write_text("".join(f"{os.path.abspath(s)}\t{os.path.abspath(o)}\n" for s, o in self.pairs))
        for _, outdir in self.pairs:
            Path(outdir, "error.txt").unlink(missing_ok=True)
        cmd = ["java", "-Xmx512m", "-XX:+UseSerialGC",
               # Loopback only: no TLS, so the name server and broker do not each generate an RSA
               # key for a self-signed certificate (the default "permissive" mode; a third of the CPU).
               "-Dtls.server.mode=disabled",
               f"-Duser.home={home}",                               # the broker's and clients' logs, offsets
               f"-Drocketmq.client.localOffsetStoreDir={home}/offsets",
               "-Drocketmq.client.logRoot=" + f"{home}/logs",
               "-Drocketmq.client.rebalance.waitInterval=1000",     # rebalance checks every second, not 20
               "-cp", classpath, MAIN_CLASS, "--batch", str(batch)]
        self._stdout = open(Path(home) / "stdout.log", "w")
        self._stderr = open(Path(home) / "stderr.log", "w+")
        self._process = subprocess.Popen(cmd, stdout=self._stdout, stderr=self._stderr, text=True)

    def wait(self) -> None:
        """Wait for the JVM; raise HarnessError naming every scenario that failed."""
        try:
            code = self._process.wait()
            self._stderr.seek(0)
            stderr = self._stderr.read()
        finally:
            self._stdout.close()
            self._stderr.close()
            self._home.cleanup()
        for line in stderr.splitlines():
            if line.endswith("running it again"):           # a group table moved mid-run (Harness.java)
                print(line, file=sys.stderr)
        errors = [f"{s}: {Path(o, 'error.txt').read_text().splitlines()[0]}"
                  for s, o in self.pairs if Path(o, "error.txt").exists()]
        if code != 0 or errors:
            detail = "\n".join(errors) or stderr[-3000:]
            raise HarnessError(f"run_scenario: {len(errors) or 'the'} scenario(s) failed:\n{detail}")

    def kill(self) -> None:
        if self._process.poll() is None:
            self._process.kill()
        try:
            self.wait()
        except HarnessError:
            pass


def start(pairs: Sequence[Tuple[str, str]]) -> Batch:
    """Start running (scenario file, outdir) pairs in one JVM, in the background."""
    return Batch(pairs)


def run(pairs: Sequence[Tuple[str, str]]) -> None:
    """Run (scenario file, outdir) pairs in one JVM, each on a fresh broker. Raises HarnessError
    naming every scenario that failed."""
    start(pairs).wait()


def main(argv: List[str]) -> int:
    if len(argv) == 2 and argv[0] != "--batch":
        pairs = [(argv[0], argv[1])]
    elif argv and argv[0] == "--batch" and len(argv) > 1 and len(argv) % 2 == 1:
        pairs = list(zip(argv[1::2], argv[2::2]))
    else:
        print("usage: run_scenario.py SCENARIO.json OUTDIR | run_scenario.py --batch S1 O1 [S2 O2 ...]",
              file=sys.stderr)
        return 2
    for s, _ in pairs:
        if not Path(s).is_file():
            print(f"run_scenario: error: no scenario file {s}", file=sys.stderr)
            return 2
    try:
        run(pairs)
    except HarnessError as e:
        print(e, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
