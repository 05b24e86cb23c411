"""Tests of the pull loop (SEMANTICS §12)."""
