"""Plain fixed-width text tables for the command line, and the cells they show.

Missing values are empty cells, never ``None``; times are timestamps a person reads
(``2024-05-01 10:00:00.000``, the session's time zone), never bare epoch milliseconds.

>>> print(format_table(["queue", "keys"], [[0, "order-1"], [1, None]]))
queue  keys
-----  -------
0      order-1
1
>>> format_millis(1714557600000, "UTC")
'2024-05-01 10:00:00.000'
"""
from __future__ import annotations

from datetime import datetime, timezone
from typing import Optional, Sequence
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

TIMESTAMP_FORMAT = "yyyy-MM-dd HH:mm:ss.SSS"  # Spark's date_format pattern for the same text


def cell(value: object) -> str:
    """A value as a table cell: empty for None, quoted when it holds a line break or the like."""
    if value is None:
        return ""
    text = str(value)
    return text if text.isprintable() else repr(text)


def format_table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """A plain fixed-width text table: a header, a rule, then the rows."""
    cells = [[str(h) for h in header]] + [[cell(v) for v in row] for row in rows]
    widths = [max(len(row[c]) for row in cells) for c in range(len(header))]
    lines = ["  ".join(v.ljust(w) for v, w in zip(row, widths)).rstrip() for row in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def _zone(name: Optional[str]):
    if not name or name.upper() in ("UTC", "Z", "GMT"):
        return timezone.utc
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        return timezone.utc  # an offset like "+08:00": Spark reads it, zoneinfo does not


def format_millis(ms: Optional[int], zone: Optional[str] = "UTC") -> str:
    """Epoch milliseconds as ``yyyy-MM-dd HH:mm:ss.SSS`` in ``zone`` (an IANA name, as Spark's
    ``spark.sql.session.timeZone``); empty for None, the number itself when out of range."""
    if ms is None:
        return ""
    try:
        moment = datetime.fromtimestamp(ms // 1000, _zone(zone))  # whole seconds: exact
    except (OverflowError, OSError, ValueError):
        return str(ms)
    return moment.strftime("%Y-%m-%d %H:%M:%S.") + f"{ms % 1000:03d}"
