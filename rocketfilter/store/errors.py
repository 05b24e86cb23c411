"""The store's errors: each names the store, table or file concerned."""
from __future__ import annotations


class StoreError(RuntimeError):
    """Something is wrong with a rocketfilter store as a whole."""


class StoreNotFoundError(StoreError, FileNotFoundError):
    """No store at the path (and ``create=False``): most often a mistyped path."""


class StoreDamagedError(StoreError):
    """A table or data file the store's log refers to is gone (deleted under a live store, a
    partial copy, a lifecycle rule on the bucket). The store refuses to go on rather than answer
    from what is left or continue offsets past lost messages."""


class StoreNotEmptyError(StoreError):
    """Importing into a store that already holds messages would mix two offset spaces."""
