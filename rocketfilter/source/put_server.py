"""A warm local Spark process for the ``rocketmq`` sink's puts.

The sink's commit runs in a Spark Python worker, which holds no session, so its put runs in a
local Spark process of its own (:mod:`.sink_put`). Starting one costs a JVM and cold jobs, about
20 s, which a streaming sink would pay on every micro-batch. So the first put starts a process
that serves puts on a Unix socket and exits after ``ROCKETFILTER_SINK_IDLE_SECONDS`` (default
120) without one; later puts from this machine's writers with the same environment reuse it.
``ROCKETFILTER_SINK_IDLE_SECONDS=0`` gives every put a process of its own, as before.

Protocol, one JSON line each way per connection: the request; ``{"accepted": true}`` once the
server has it (before that, a closed connection means nothing was put, so the client may start a
fresh server and ask again); then the answer, ``{"messages": n}`` or ``{"error": ..., "message": ...}``.
A ``{"stop": true}`` request ends the server (:func:`stop_servers`).
"""
from __future__ import annotations

import fcntl
import functools
import hashlib
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Dict, Iterator, Optional, Tuple

IDLE_ENV = "ROCKETFILTER_SINK_IDLE_SECONDS"
DEFAULT_IDLE_SECONDS = 120.0
# What makes two writers' put processes interchangeable, besides the interpreter and the package
# (the idle time is not: a server keeps its starter's).
_KEY_ENV_PREFIXES = ("AWS_", "JAVA_", "HADOOP_", "ROCKETFILTER_", "PYSPARK_PYTHON")
_START_TIMEOUT_SECONDS = 600.0   # a first start may fetch hadoop-aws from Maven Central
# A new server waits at least this long for its first put, which its starter is about to send
# (a short idle time must not end it before that on a loaded machine).
_FIRST_PUT_GRACE_SECONDS = 120.0


_STARTED: list = []   # servers this process started, reaped once they exit


class ServerGone(Exception):
    """The server closed the connection before accepting the request: nothing was put."""


def idle_seconds(env: Optional[Dict[str, str]] = None) -> float:
    """The idle time after which a put server exits; 0 means no server (a process per put)."""
    raw = (env if env is not None else os.environ).get(IDLE_ENV, "")
    if not raw.strip():
        return DEFAULT_IDLE_SECONDS
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(f"{IDLE_ENV}={raw!r}: expected seconds (a number, 0 for no put server)") from None
    if value < 0:
        raise ValueError(f"{IDLE_ENV}={raw!r}: expected seconds >= 0")
    return value


def _runtime_dir() -> Path:
    path = Path(tempfile.gettempdir()) / f"rocketfilter-put-{os.getuid()}"
    path.mkdir(mode=0o700, exist_ok=True)
    info = path.stat()
    if info.st_uid != os.getuid() or info.st_mode & 0o077:   # its sockets put into any store
        raise PermissionError(f"{path}: the put servers' directory must be this user's alone (mode 700)")
    return path


def server_key(store: str, env: Dict[str, str]) -> str:
    """Which server a put to ``store`` may use: one per interpreter, package (and its files' last
    change, so an edited or upgraded install gets a new one), S3 or not, and the environment that
    configures Spark and S3."""
    import pyspark

    from rocketfilter.delta.object_store import is_s3

    # Spark's workers set SPARK_HOME; elsewhere it is pyspark's own (so a driver's put matches).
    spark_home = env.get("SPARK_HOME") or os.path.dirname(pyspark.__file__)
    settings = sorted((k, v) for k, v in env.items() if k.startswith(_KEY_ENV_PREFIXES) and k != IDLE_ENV)
    parts = [sys.executable, *_install(), is_s3(store), spark_home, settings]
    return hashlib.sha256(json.dumps(parts).encode()).hexdigest()[:16]


@functools.lru_cache(maxsize=1)
def _install() -> Tuple[str, int]:
    """This install's directory and its files' last change (read once per process: a process
    runs the code it imported, whatever changes later)."""
    package = Path(__file__).resolve().parents[1]   # rocketfilter/
    return str(package), max(p.stat().st_mtime_ns for p in package.rglob("*.py"))


def _lines(conn: socket.socket) -> Iterator[dict]:
    buffer = b""
    while True:
        chunk = conn.recv(65536)
        if not chunk:
            return
        buffer += chunk
        while b"\n" in buffer:
            line, buffer = buffer.split(b"\n", 1)
            yield json.loads(line)


def _ask(path: Path, request: dict) -> dict:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.connect(str(path))
        lines = _lines(conn)
        try:
            conn.sendall(json.dumps(request).encode() + b"\n")
            accepted = next(lines, None)
        except (ConnectionResetError, BrokenPipeError):
            accepted = None
        if accepted != {"accepted": True}:
            raise ServerGone(str(path))
        try:
            answer = next(lines, None)
        except ConnectionResetError:
            answer = None
    if answer is None:
        raise RuntimeError(f"the put server at {path} ended during the put; whether the put landed is "
                           f"unknown (its log: {path.with_suffix('.log')})")
    return answer


def _start(key: str, store: str, env: Dict[str, str], idle: float) -> None:
    """Start the server for ``key`` and wait until it listens (the caller holds the lock)."""
    runtime = _runtime_dir()
    base = runtime / key
    sock = base.with_suffix(".sock")
    if sock.exists():
        sock.unlink()   # a server that died without removing it
    _prune(runtime, keep=key)
    log = open(base.with_suffix(".log"), "wb")
    proc = subprocess.Popen([sys.executable, "-m", "rocketfilter.source.put_server", str(sock), str(idle), store],
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=log, env=env,
                            start_new_session=True)   # it outlives the writer's worker
    log.close()
    _STARTED.append(proc)
    ready = proc.stdout.readline()   # one line once it listens; EOF if it failed to start
    proc.stdout.close()
    if not ready.startswith(b"{"):
        proc.wait(timeout=_START_TIMEOUT_SECONDS)
        tail = "\n".join(base.with_suffix(".log").read_text(errors="replace").strip().splitlines()[-8:])
        raise RuntimeError(f"the put server did not start (exit {proc.returncode}):\n{tail}")


def _prune(runtime: Path, keep: str, age_seconds: float = 86400.0) -> None:
    """Remove the logs and locks of servers gone for a day (each install or setting has its own)."""
    cutoff = time.time() - age_seconds
    for path in [*runtime.glob("*.log"), *runtime.glob("*.lock")]:
        try:
            if path.stem != keep and not path.with_suffix(".sock").exists() and path.stat().st_mtime < cutoff:
                path.unlink()
        except OSError:
            pass


def put(request: dict, env: Dict[str, str], idle: float) -> dict:
    """``request``'s answer from this environment's put server, started if none listens."""
    _STARTED[:] = [p for p in _STARTED if p.poll() is None]
    key = server_key(request["store"], env)
    base = _runtime_dir() / key
    sock = base.with_suffix(".sock")
    for _ in range(3):
        try:
            return _ask(sock, request)
        except (FileNotFoundError, ConnectionRefusedError, ServerGone):
            with open(base.with_suffix(".lock"), "w") as lock:
                fcntl.flock(lock, fcntl.LOCK_EX)   # one writer starts it; the others then use it
                try:
                    return _ask(sock, request)
                except (FileNotFoundError, ConnectionRefusedError, ServerGone):
                    _start(key, request["store"], env, idle)
    raise RuntimeError(f"the put server at {sock} kept closing before accepting the put")


def stop_servers() -> int:
    """Stop every put server of this user on this machine; how many were stopped."""
    stopped = 0
    for sock in _runtime_dir().glob("*.sock"):
        try:
            _ask(sock, {"stop": True})
            stopped += 1
        except (OSError, ServerGone, RuntimeError):
            pass
    return stopped


def serve(path: str, idle: float, store: str) -> int:
    """Listen on ``path``; answer puts one at a time until ``idle`` seconds pass without one.
    ``store`` is the first put's (an S3 store's session gets hadoop-aws)."""
    from rocketfilter.hooks import session_hooks_suspended
    from rocketfilter.source.sink_put import answer_request, local_session

    # The starter reads one line on stdout; everything else, the JVM's output included, goes to
    # the log (the duplicate is not inherited by the JVM).
    ready = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    with session_hooks_suspended():
        spark = local_session(store)
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as listener:
            listener.bind(path)
            listener.listen(16)
            listener.settimeout(max(idle, _FIRST_PUT_GRACE_SECONDS))
            ready.write(json.dumps({"ready": os.getpid()}) + "\n")
            ready.close()
            try:
                while True:
                    try:
                        conn, _ = listener.accept()
                    except socket.timeout:
                        break
                    listener.settimeout(idle)
                    with conn:
                        conn.settimeout(None)
                        request = next(_lines(conn), None)
                        if request is None:
                            continue
                        conn.sendall(b'{"accepted": true}\n')
                        if request.get("stop"):
                            conn.sendall(b'{"stopped": true}\n')
                            break
                        started = time.monotonic()
                        answer = dict(answer_request(spark, request), server_pid=os.getpid())
                        conn.sendall(json.dumps(answer).encode() + b"\n")
                        print(f"put {len(request.get('files', []))} files into {request.get('store')}: {answer} "
                              f"in {time.monotonic() - started:.1f} s", file=sys.stderr, flush=True)
                        if spark.sparkContext._jsc.sc().isStopped():
                            break   # its JVM is gone: the next put starts a fresh server
            finally:   # unlinked while still bound, so no new server's socket is ever removed
                if os.path.exists(path):
                    os.unlink(path)
        spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(serve(sys.argv[1], float(sys.argv[2]), sys.argv[3]))
