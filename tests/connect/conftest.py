"""The sample broker store's fixtures (tests/store/conftest.py), for the Connect import test."""
from tests.store.conftest import manifest, sample  # noqa: F401
