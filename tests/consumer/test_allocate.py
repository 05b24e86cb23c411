"""AllocateMessageQueueAveragely (SEMANTICS §13) against extra_cases.json."""
from __future__ import annotations

import pytest

from ..conftest import conformance
from rocketfilter.consumer import allocate_averagely


@pytest.mark.parametrize("case", conformance.params("extra_cases.json", "alloc"))
def test_alloc_case(case):
    mq_all = list(range(case["mqs"]))
    if "error" in case:
        with pytest.raises(ValueError) as info:
            allocate_averagely("G", case["cid"], mq_all, case["cids"])
        java_message = case["error"].split(": ", 1)[1]
        assert java_message in str(info.value), f"{case['id']}: got {info.value!r}, want {case['error']!r}"
        return
    got = allocate_averagely("G", case["cid"], mq_all, case["cids"])
    assert got == case["queue_ids"], (f"{case['id']} mqs={case['mqs']} cids={case['cids']} cid={case['cid']}: "
                                      f"got {got}, want {case['queue_ids']}")


def test_empty_queue_list_raises():
    with pytest.raises(ValueError, match="mqAll is null or mqAll empty"):
        allocate_averagely("G", "c1", [], ["c1"])


def test_spec_example_and_unknown_consumer():
    cids = ["c0", "c1", "c2"]
    assert [allocate_averagely("G", c, list("abcdefgh"), cids) for c in cids] == [
        ["a", "b", "c"], ["d", "e", "f"], ["g", "h"]]
    assert allocate_averagely("G", "stranger", [1, 2], cids) == []
    assert allocate_averagely("G", "c2", [1, 2], cids) == []   # fewer queues than consumers


def test_every_queue_assigned_exactly_once():
    for n in range(1, 13):
        for c in range(1, 7):
            cids = [f"c{i}" for i in range(c)]
            taken = [q for cid in cids for q in allocate_averagely("G", cid, list(range(n)), cids)]
            assert taken == list(range(n)), (n, c)
