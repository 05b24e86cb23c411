"""Tests of group analysis (rocketfilter/groups/): replay, diagnosis, explain_message."""
