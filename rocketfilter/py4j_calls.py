"""Fewer py4j round trips for building Columns on a classic session.

Each ``pyspark.sql.functions`` call (``F.when``, ``F.lit``, ``F.coalesce`` ...) first looks up its
JVM method with two py4j round trips (the ``functions`` class, then the method), and every list
of Columns it passes looks up ``PythonUtils.toSeq`` with two more, then sends the list one element
a call. The handles never change while the JVM runs, so :func:`cache_jvm_lookups` keeps them per
JVM, and a list of up to 10 Columns goes over in one ``java.util.List.of`` call. A selector's
Columns are hundreds of such calls: a 200-term ``(a = 'i' AND b > i) OR ...`` chain compiled in
6.8 s before, 3.3 s with the lookups cached and 2.8 s with short lists in one call (measured). The
Columns are the same either way.

It replaces two private pyspark helpers (``_get_jvm_function`` and ``_to_seq``) with caching
wrappers of themselves, and leaves pyspark alone where they are missing or differ. Spark Connect
builds no Columns through py4j and is not touched.
"""
from __future__ import annotations

import inspect
import threading
import weakref
from typing import Any, Callable, Dict

# java.util.List.of takes up to 10 elements (no nulls) in one call; py4j's own conversion of a
# Python list sends one call per element.
_LIST_OF_ARITY = 10
_LOCK = threading.Lock()
_INSTALLED = False
# JVM view (one per gateway) -> {lookup name: JVM member}
_MEMBERS: "weakref.WeakKeyDictionary[Any, Dict[str, Any]]" = weakref.WeakKeyDictionary()


def _member(jvm: Any, name: str, find: Callable[[], Any]) -> Any:
    if jvm is None:   # no gateway: pyspark's own helper raises its own error
        return find()
    members = _MEMBERS.get(jvm)
    if members is None:
        members = _MEMBERS.setdefault(jvm, {})
    found = members.get(name)
    if found is None:
        found = members[name] = find()
    return found


def cache_jvm_lookups() -> bool:
    """Install the cached lookups once per process; False when this pyspark has other helpers.

    >>> cache_jvm_lookups()   # doctest: +SKIP
    True
    """
    global _INSTALLED
    with _LOCK:
        if _INSTALLED:
            return True
        try:
            from pyspark.sql.classic import column as classic_column
            from pyspark.sql.functions import builtin
        except ImportError:
            return False
        get_function = getattr(builtin, "_get_jvm_function", None)
        to_seq = getattr(classic_column, "_to_seq", None)
        if not (callable(get_function) and callable(to_seq)
                and list(inspect.signature(get_function).parameters) == ["name", "sc"]
                and list(inspect.signature(to_seq).parameters) == ["sc", "cols", "converter"]):
            return False

        def cached_get_function(name: str, sc: Any) -> Any:
            return _member(sc._jvm, name, lambda: get_function(name, sc))

        def cached_to_seq(sc: Any, cols: Any, converter: Any = None) -> Any:
            if converter:
                cols = [converter(c) for c in cols]
            jvm = sc._jvm
            to_list = _member(jvm, " toSeq", lambda: jvm.PythonUtils.toSeq)
            if (isinstance(cols, list) and 0 < len(cols) <= _LIST_OF_ARITY
                    and all(c is not None for c in cols)):
                cols = _member(jvm, " List.of", lambda: jvm.java.util.List.of)(*cols)
            return to_list(cols)

        builtin._get_jvm_function = cached_get_function
        classic_column._to_seq = cached_to_seq
        _INSTALLED = True
        return True
