"""Tests of the generic Delta tables (rocketfilter/delta/)."""
