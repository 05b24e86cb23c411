"""A consumer's subscription to one topic, as a group's Python API and its file spell it, to a
``SubscriptionData`` (``FilterAPI.build``) and back.

>>> sub = build_subscription_spec("T", ("a > 1", "SQL92"), 7)
>>> sub.sub_string, sub.expression_type, sub.sub_version
('a > 1', 'SQL92', 7)
>>> subscription_to_spec(build_subscription_spec("T", "tagA || tagB", 7))
'tagA || tagB'
>>> sub = build_subscription_spec("T", {"expression": "tagA", "subVersion": 9}, 7)   # its own version
>>> sub.sub_version, subscription_to_spec(sub, 7)
(9, {'expression': 'tagA', 'subVersion': 9})
"""
from __future__ import annotations

from typing import Mapping, Optional, Tuple, Union

from rocketfilter.javalang import LONG_MAX, LONG_MIN
from rocketfilter.naming import validate_topic
from rocketfilter.tags import SQL92, TAG, SubscriptionData, build_subscription

#: A subscription: a TAG expression (None is "*"), ``(expression, type)`` or
#: ``{"expression": ..., "type": ..., "subVersion": ...}``; the type is "TAG" (the default) or
#: "SQL92", and ``subVersion`` (optional) overrides the consumer's version for this topic.
SubscriptionSpec = Union[str, None, Tuple[str, str], Mapping[str, str]]
EXPRESSION_TYPES = (TAG, SQL92)


def build_subscription_spec(topic: str, spec: SubscriptionSpec, sub_version: int) -> SubscriptionData:
    """The ``SubscriptionData`` of ``topic`` at ``sub_version`` (or the spec's own ``subVersion``).
    Raises ValueError for a bad topic name, shape, type, version, or a TAG expression the client
    refuses (``"||"``, as ``FilterAPI.build``); a SQL92 expression is not compiled here (the
    broker compiles it, as in RocketMQ)."""
    validate_topic(topic)
    if spec is None or isinstance(spec, str):
        expression, expression_type = spec, TAG
    elif isinstance(spec, Mapping):
        unknown = sorted(set(spec) - {"expression", "type", "subVersion"})
        if unknown or "expression" not in spec:
            raise ValueError(f"a subscription is {{\"expression\": ..., \"type\": \"TAG\"|\"SQL92\"}} "
                             f"(and optionally \"subVersion\"); got keys {sorted(spec)}")
        expression, expression_type = spec["expression"], spec.get("type", TAG)
        sub_version = spec.get("subVersion", sub_version)
        if isinstance(sub_version, bool) or not isinstance(sub_version, int) \
                or not LONG_MIN <= sub_version <= LONG_MAX:
            raise ValueError(f"subVersion: expected an integer (a Java long), got {sub_version!r}")
    elif isinstance(spec, (tuple, list)) and len(spec) == 2:
        expression, expression_type = spec
    else:
        raise ValueError(f"a subscription is a TAG expression, (expression, type) or "
                         f"{{\"expression\": ..., \"type\": ...}}; got {spec!r}")
    if expression is not None and not isinstance(expression, str):
        raise ValueError(f"the expression must be a string, got {expression!r}")
    if expression_type not in EXPRESSION_TYPES:
        raise ValueError(f"the expression type must be TAG or SQL92, got {expression_type!r}")
    sub = build_subscription(topic, expression, expression_type)
    sub.sub_version = sub_version
    return sub


def subscription_to_spec(sub: SubscriptionData, sub_version: Optional[int] = None) -> Union[str, dict]:
    """The file spelling of ``sub``: its expression for TAG, else ``{"expression", "type"}``; with
    ``"subVersion"`` too when it differs from ``sub_version`` (its consumer's)."""
    own_version = sub_version is not None and sub.sub_version != sub_version
    if sub.expression_type == TAG and not own_version:
        return sub.sub_string
    spec: dict = {"expression": sub.sub_string}
    if sub.expression_type != TAG:
        spec["type"] = sub.expression_type
    if own_version:
        spec["subVersion"] = sub.sub_version
    return spec
