"""Where settings come from: Java ``.properties`` text and ``spark.rocketfilter.*`` Spark conf.

Both yield raw RocketMQ ``key -> value`` strings; rocketfilter.config turns them into settings
and re-exports every name here. ConfigError lives here, the lowest layer, so the parser can
raise it without importing rocketfilter.config.
"""
from __future__ import annotations

from typing import Any, Dict, List, Mapping, Tuple

SPARK_PREFIX = "spark.rocketfilter."
# spark.rocketfilter.storage.<key>: a storage option of the store (delta-rs's spelling), not a
# broker or store setting.
STORAGE_PREFIX = "storage."


class ConfigError(ValueError):
    """A setting that cannot be read: unknown key, bad value; the message says where."""


def parse_properties(text: str) -> List[Tuple[str, str, int]]:
    """Java ``Properties.load``: ``(key, value, line number)`` in file order.

    Comments start with ``#`` or ``!``; a key ends at the first unescaped ``=``, ``:`` or blank;
    a trailing odd backslash continues the line; ``\\t \\n \\r \\f \\uXXXX`` are unescaped.

    >>> parse_properties("# c\\nenablePropertyFilter = false\\nbrokerName=a\\\\\\n  b")
    [('enablePropertyFilter', 'false', 2), ('brokerName', 'ab', 3)]
    """
    out: List[Tuple[str, str, int]] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        start, logical = i + 1, lines[i].lstrip(" \t\f")
        i += 1
        if not logical or logical[0] in "#!":
            continue
        while _continues(logical) and i < len(lines):
            logical = logical[:-1] + lines[i].lstrip(" \t\f")
            i += 1
        if _continues(logical):
            logical = logical[:-1]
        key, value = _split_key_value(logical)
        out.append((_unescape(key), _unescape(value), start))
    return out


def _continues(line: str) -> bool:
    return (len(line) - len(line.rstrip("\\"))) % 2 == 1


def _split_key_value(line: str) -> Tuple[str, str]:
    j = 0
    while j < len(line):
        c = line[j]
        if c == "\\":
            j += 2
            continue
        if c in "=: \t\f":
            break
        j += 1
    key, rest = line[:j], line[j:].lstrip(" \t\f")
    if rest[:1] in ("=", ":"):
        rest = rest[1:].lstrip(" \t\f")
    return key, rest


def _unescape(s: str) -> str:
    out, j = [], 0
    while j < len(s):
        c = s[j]
        if c != "\\" or j + 1 >= len(s):
            out.append(c)
            j += 1
            continue
        n = s[j + 1]
        if n == "u" and len(s) >= j + 6:
            try:
                out.append(chr(int(s[j + 2:j + 6], 16)))
            except ValueError:
                raise ConfigError(f"malformed \\uXXXX escape in {s!r}") from None
            j += 6
            continue
        out.append({"t": "\t", "n": "\n", "r": "\r", "f": "\f"}.get(n, n))
        j += 2
    return "".join(out)


def spark_conf_items(conf: Any) -> Dict[str, str]:
    """``spark.rocketfilter.*`` settings of a dict, SparkConf, RuntimeConfig or SparkSession,
    keyed by their RocketMQ name (``spark.rocketfilter.storage.*`` are :func:`storage_conf_items`)."""
    return {k: v for k, v in _prefixed(conf).items() if not k.startswith(STORAGE_PREFIX)}


def storage_conf_items(conf: Any) -> Dict[str, str]:
    """The storage options among the ``spark.rocketfilter.storage.<key>`` settings of ``conf``.

    >>> storage_conf_items({"spark.rocketfilter.storage.AWS_REGION": "eu-west-1"})
    {'AWS_REGION': 'eu-west-1'}
    """
    return {k[len(STORAGE_PREFIX):]: v for k, v in _prefixed(conf).items() if k.startswith(STORAGE_PREFIX)}


def _prefixed(conf: Any) -> Dict[str, str]:
    if conf is None:
        return {}
    if not isinstance(conf, Mapping) and not hasattr(conf, "getAll") and hasattr(conf, "conf"):
        conf = conf.conf  # a SparkSession: its RuntimeConfig
    if isinstance(conf, Mapping):
        pairs = conf.items()
    else:
        get_all = conf.getAll
        got = get_all() if callable(get_all) else get_all
        pairs = got.items() if isinstance(got, Mapping) else got
    return {k[len(SPARK_PREFIX):]: str(v) for k, v in pairs if k.startswith(SPARK_PREFIX)}
