"""Plain fixed-width text tables for the command line, and the cells they show.

Missing values are empty cells, never ``None``; times are timestamps a person reads
(``2024-05-01 10:00:00.000``, the session's time zone), never bare epoch milliseconds.

>>> print(format_table(["queue", "keys"], [[0, "order-1"], [1, None], [2, "订单-2"]]))
queue  keys
-----  -------
0      order-1
1
2      订单-2
>>> format_millis(1714557600000, "UTC")
'2024-05-01 10:00:00.000'
"""
from __future__ import annotations

from datetime import datetime, timezone
from typing import Iterator, Optional, Sequence
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

TIMESTAMP_FORMAT = "yyyy-MM-dd HH:mm:ss.SSS"  # Spark's date_format pattern for the same text
# The characters a terminal draws two columns wide (East Asian wide and fullwidth, emoji), as a
# Java regex: Spark sizes a column in the JVM with it, rows are then padded by :func:`width`.
WIDE_JAVA_REGEX = ("[\\u1100-\\u115F\\u2E80-\\u303E\\u3041-\\u33FF\\u3400-\\u4DBF\\u4E00-\\u9FFF\\uA000-\\uA4CF"
                   "\\uAC00-\\uD7A3\\uF900-\\uFAFF\\uFE30-\\uFE4F\\uFF00-\\uFF60\\uFFE0-\\uFFE6"
                   "\\x{1F300}-\\x{1F64F}\\x{1F680}-\\x{1F6FF}\\x{1F900}-\\x{1F9FF}\\x{20000}-\\x{3FFFD}]")


def cell(value: object) -> str:
    """A value as a table cell: empty for None, quoted when it holds a line break or the like."""
    if value is None:
        return ""
    text = str(value)
    return text if text.isprintable() else repr(text)


def width(text: str) -> int:
    """The columns ``text`` takes on a terminal (``rich``'s cell widths, as wcwidth: a CJK
    character or an emoji takes two, a combining mark none)."""
    from rich.cells import cell_len

    return cell_len(text)


def pad(text: str, columns: int) -> str:
    """``text`` padded with spaces to ``columns`` terminal columns (``str.ljust`` counts code
    points, which misaligns CJK and emoji)."""
    return text + " " * max(0, columns - width(text))


def format_lines(header: Sequence[str], rows) -> Iterator[str]:
    """:func:`format_table`'s lines, for rows that arrive one at a time once the widths are
    known: ``format_lines(header, rows)`` with ``rows`` a list, else see :func:`aligned`."""
    cells = [[str(h) for h in header]] + [[cell(v) for v in row] for row in rows]
    widths = [max(width(row[c]) for row in cells) for c in range(len(header))]
    yield aligned(cells[0], widths)
    yield "  ".join("-" * w for w in widths)
    for row in cells[1:]:
        yield aligned(row, widths)


def aligned(cells: Sequence[str], widths: Sequence[int]) -> str:
    """One table line: ``cells`` padded to ``widths`` display columns, two spaces apart."""
    return "  ".join(pad(v, w) for v, w in zip(cells, widths)).rstrip()


def format_table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """A plain fixed-width text table: a header, a rule, then the rows, aligned by display
    width (CJK and emoji take two columns)."""
    return "\n".join(format_lines(header, rows))


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
