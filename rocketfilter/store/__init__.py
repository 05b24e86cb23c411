"""The Delta message store: CommitLog, ConsumeQueue, consumer offsets and topics tables."""
from rocketfilter.store.errors import StoreDamagedError, StoreError, StoreNotFoundError
from rocketfilter.store.store import MessageStore

__all__ = ["MessageStore", "StoreError", "StoreNotFoundError", "StoreDamagedError"]
