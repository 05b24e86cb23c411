"""Optimistic concurrency: redo a read-modify-commit until its commit lands."""
from __future__ import annotations

import logging
import random
import time

from rocketfilter.delta.errors import ConcurrentCommitError

log = logging.getLogger(__name__)

RETRIES = 20


def retry_on_conflict(work, what: str, retries: int = RETRIES):
    """Run ``work()`` until its commit lands; a lost race re-reads and redoes the work."""
    for attempt in range(retries):
        try:
            return work()
        except ConcurrentCommitError:
            if attempt == retries - 1:
                raise
            log.info("%s lost a commit race; retrying (attempt %d)", what, attempt + 2)
            time.sleep(random.uniform(0.01, 0.05) * (attempt + 1))
