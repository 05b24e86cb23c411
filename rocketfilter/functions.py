"""DataFrame-facing filters: each returns a never-null boolean Column for ``df.filter``.

>>> from rocketfilter.functions import sql92, tag_filter, tag_exact_filter
>>> delivered = (df.filter(tag_filter("TagA || TagC"))          # doctest: +SKIP
...                .filter(tag_exact_filter("TagA || TagC")))
>>> df.filter(sql92("age BETWEEN 6 AND 9 AND name IS NOT NULL"))  # doctest: +SKIP
"""
from __future__ import annotations

from typing import Optional, Union

from pyspark.sql import Column

from rocketfilter.tags import build_subscription
from rocketfilter.tag_columns import tag_code_predicate, tag_exact_predicate

ColumnOrName = Union[Column, str]

# build_subscription needs a topic, but neither predicate reads it.
_ANY_TOPIC = ""


def tag_filter(sub_string: Optional[str], tags_code: ColumnOrName = "tags_code") -> Column:
    """The broker's tag-code check for the tag expression ``sub_string`` (``"*"``, ``"a || b"``).

    Hash collisions pass, as on a broker; add :func:`tag_exact_filter` for what a client keeps.
    Raises ValueError for an expression RocketMQ rejects (``"||"``).

    >>> df.filter(tag_filter("TagA || TagC"))                     # doctest: +SKIP
    """
    return tag_code_predicate(build_subscription(_ANY_TOPIC, sub_string), tags_code)


def tag_exact_filter(sub_string: Optional[str], tags: ColumnOrName = "tags") -> Column:
    """The client's exact re-check of the ``TAGS`` string against the subscribed tags.

    >>> df.filter(tag_exact_filter("TagA || TagC", tags="tags"))  # doctest: +SKIP
    """
    return tag_exact_predicate(build_subscription(_ANY_TOPIC, sub_string), tags)


def sql92(text: str, properties: Optional[ColumnOrName] = "properties", schema=None) -> Column:
    """A SQL92 selector as a Column: TRUE exactly where the broker would deliver.

    ``properties`` names the ``map<string,string>`` column (or is a Column); ``None`` resolves
    properties as top-level columns, typed by ``schema`` (the DataFrame's). Raises
    ``SelectorSyntaxError`` (a ValueError) for text RocketMQ would not compile.

    >>> df.filter(sql92("(age BETWEEN 6 AND 9) AND (isGender = TRUE)"))  # doctest: +SKIP
    """
    from rocketfilter.selector import parse  # late: tag-only users never load the grammar

    return parse(text).to_column(properties=properties, schema=schema)
