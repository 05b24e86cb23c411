"""An error as the command line reports it: one line that names the innermost cause, or with
``--verbose`` the whole chain (each exception's type and full message, no Python frames).

The outer exception's first line often says nothing: a Spark Connect failure reads
``SparkConnectGrpcException: <_InactiveRpcError of RPC that terminated with:`` and a Py4J failure
``Py4JJavaError: An error occurred while calling o58.load.``. The cause is further in: the gRPC
status code and detail, the last Java ``Caused by:``, or the innermost exception of the chain
(``raise ... from``, and the context pyspark suppresses with ``from None``).

>>> try:
...     try:
...         raise OSError("disk gone")
...     except OSError as e:
...         raise RuntimeError("write failed:") from e
... except RuntimeError as error:
...     error_line(error)
'RuntimeError: write failed: OSError: disk gone'
"""
from __future__ import annotations

import re
from typing import List, Optional

_GRPC_STATUS = re.compile(r"status\s*=\s*(StatusCode\.[A-Z_]+)")
_GRPC_DETAILS = re.compile(r'details\s*=\s*"(.*)"')
# A Java exception line: "java.lang.IllegalStateException: msg", "Caused by: org.x.FooError: msg".
_JAVA = re.compile(r"^(?:Caused by: |: )?((?:[a-z_$][\w$]*\.)+[A-Z][\w$]*(?:Exception|Error|Throwable)\b.*)$")


def _text(exc: BaseException) -> str:
    """``str(exc)``, never raising: a Py4J error asks the JVM, which may be gone."""
    try:
        return str(exc)
    except Exception:  # noqa: BLE001
        return repr(exc.args)


def chain(exc: BaseException) -> List[BaseException]:
    """``exc`` and its causes, outermost first: ``__cause__``, else ``__context__`` (also when
    suppressed with ``from None``, which is where pyspark leaves the gRPC error)."""
    out: List[BaseException] = []
    while exc is not None and all(exc is not seen for seen in out):
        out.append(exc)
        exc = exc.__cause__ if exc.__cause__ is not None else exc.__context__
    return out


def grpc_cause(exc: BaseException) -> Optional[str]:
    """``StatusCode.X: "detail"`` of a gRPC error (the call itself, or its text in a wrapper)."""
    code = details = None
    if callable(getattr(exc, "code", None)) and callable(getattr(exc, "details", None)):
        try:
            code, details = exc.code(), exc.details()
        except Exception:  # noqa: BLE001 - a look at the error must not raise
            code = details = None
    if code is None:
        text = _text(exc)
        status, said = _GRPC_STATUS.search(text), _GRPC_DETAILS.search(text)
        if status is None:
            return None
        code, details = status.group(1), said.group(1) if said else None
    return f'{code}: "{details}"' if details else str(code)


def java_cause(exc: BaseException) -> Optional[str]:
    """The innermost Java exception a Py4J (or a Spark) error's text names: the last
    ``Caused by:`` line, else the first Java exception line."""
    lines = _text(exc).splitlines()
    found = [m.group(1).strip() for m in map(_JAVA.match, lines) if m]
    if not found:
        return None
    causes = [line for line in lines if line.startswith("Caused by: ")]
    return _JAVA.match(causes[-1]).group(1).strip() if causes else found[0]


def _first_line(exc: BaseException) -> str:
    text = _text(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0].strip()}" if text else type(exc).__name__


def _said_nothing(line: str) -> bool:
    """A first line that says nothing of what went wrong (a repr, Py4J's call site)."""
    text = line.split(": ", 1)[1] if ": " in line else ""
    return not text or text.startswith("<") or text.startswith("An error occurred while calling")


def error_line(exc: BaseException) -> str:
    """``Type: first line`` of ``exc``, followed (or replaced, where it was cut) by the innermost
    cause: a gRPC status and detail, a Java exception's message, or the last exception of the
    chain."""
    head = _first_line(exc)
    links = chain(exc)
    inner = None
    for link in reversed(links):
        inner = grpc_cause(link) or java_cause(link)
        if inner:
            break
    if inner is None and len(links) > 1:
        inner = _first_line(links[-1])
    said = inner.split(": ", 1)[-1][:80] if inner else ""
    if not inner or inner in head or said in head:
        return head   # the first line says it already (a Spark error and its JVM stack trace)
    if _said_nothing(head):
        return f"{type(exc).__name__}: {inner}"
    return f"{head} {inner}" if head.endswith(":") else f"{head}; caused by {inner}"


def error_chain(exc: BaseException) -> List[str]:
    """Every exception of the chain, outermost first, with its whole message (``--verbose``)."""
    lines = []
    for i, link in enumerate(chain(exc)):
        text = _text(link).rstrip()
        lines.append(("" if i == 0 else "caused by: ") + f"{type(link).__name__}: {text}")
    return lines
