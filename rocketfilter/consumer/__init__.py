"""Client-side consumer logic: how a group's consumers share a topic's queues."""
from rocketfilter.consumer.allocate import allocate_averagely

__all__ = ["allocate_averagely"]
