"""The Delta message store: CommitLog, ConsumeQueue, consumer offsets and topics tables."""
from rocketfilter.store.store import MessageStore

__all__ = ["MessageStore"]
