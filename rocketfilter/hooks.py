"""Late bindings between layers: a lower layer calls work that a higher one registers here, so
that no module imports upward (docs/architecture.md).

The facade (``rocketfilter/__init__.py``), which Python runs before any module of the package,
registers the package's own: the ``rocketmq`` data source for every session ``get_spark``
returns, and the pull path behind ``MessageStore.get_message``. Nothing here imports Spark.

>>> on_new_session(lambda spark: spark.conf.set("spark.sql.session.timeZone", "UTC"))  # doctest: +SKIP
>>> get_spark().conf.get("spark.sql.session.timeZone")                                   # doctest: +SKIP
'UTC'
"""
from __future__ import annotations

import logging
from contextlib import contextmanager
from typing import Any, Callable, Iterator, List, Optional

log = logging.getLogger(__name__)

_SESSION_HOOKS: List[Callable[[Any], None]] = []
_GET_MESSAGE: List[Callable[..., Any]] = []
_SUSPENDED: List[bool] = []


def on_new_session(hook: Callable[[Any], None]) -> None:
    """Run ``hook(spark)`` on every session ``rocketfilter.session.get_spark`` returns (once
    per registration: registering the same hook again does nothing)."""
    if hook not in _SESSION_HOOKS:
        _SESSION_HOOKS.append(hook)


def run_session_hooks(spark: Any) -> None:
    """Every registered session hook on ``spark``, in order. A hook that fails is logged as a
    warning: the session itself is fine (a Connect server without Python data sources, say).
    Nothing runs inside :func:`session_hooks_suspended`."""
    if _SUSPENDED:
        return
    for hook in list(_SESSION_HOOKS):
        try:
            hook(spark)
        except Exception as error:  # noqa: BLE001 - the session stays usable
            log.warning("could not set up this session (%s): %s", getattr(hook, "__name__", hook), error)


@contextmanager
def session_hooks_suspended() -> Iterator[None]:
    """No session hook runs inside: for a short-lived process that needs none of them. The
    sink's put process is one: registering the ``rocketmq`` source makes Spark start its Python
    data-source lookup, 3 to 5 s of a 25-s put (measured)."""
    _SUSPENDED.append(True)
    try:
        yield
    finally:
        _SUSPENDED.pop()


def provide_get_message(function: Callable[..., Any]) -> None:
    """Make ``function(store, group, topic, queue_id, offset, max_msg_nums, message_filter)`` the
    pull behind ``MessageStore.get_message`` (the last one registered wins)."""
    _GET_MESSAGE[:] = [function]


def get_message_function() -> Callable[..., Any]:
    """The registered pull behind ``MessageStore.get_message``."""
    found: Optional[Callable[..., Any]] = _GET_MESSAGE[0] if _GET_MESSAGE else None
    if found is None:
        raise RuntimeError("MessageStore.get_message has no pull path registered: import rocketfilter "
                           "(its __init__ registers rocketfilter.pull.get_message)")
    return found
