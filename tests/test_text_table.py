"""Tables line up by display width: CJK and emoji take two terminal columns, a combining mark
none (what a terminal draws, measured independently with wcwidth)."""
from __future__ import annotations

from wcwidth import wcswidth

from rocketfilter.text_table import aligned, format_table, width

KEYS = ["order-1", "订单-2", "注文🍣", "e\u0301clair", "😀😀", None]


def test_columns_start_at_the_same_display_column():
    text = format_table(["key", "queue", "tags"], [[k, i, "TagA"] for i, k in enumerate(KEYS)])
    lines = text.splitlines()
    header, rule, rows = lines[0], lines[1], lines[2:]
    key_width = max(wcswidth(k or "") for k in KEYS)
    assert rule.split("  ")[0] == "-" * key_width
    for line, key in zip(rows, KEYS):
        shown = key or ""
        rest = line[len(shown):]
        # after the key, padding to the key column's display width, then two spaces
        assert wcswidth(shown) + len(rest) - len(rest.lstrip(" ")) == key_width + 2, line
    queue_at = wcswidth(header[:header.index("queue")])
    for line, i in zip(rows, range(len(KEYS))):
        start = line.index(f"  {i}  ") + 2
        assert wcswidth(line[:start]) == queue_at, line


def test_width_is_the_terminal_width():
    for text in ("abc", "订单", "🍣", "e\u0301", ""):
        assert width(text) == wcswidth(text)
    assert aligned(["订单", "x"], [6, 1]) == "订单    x"
