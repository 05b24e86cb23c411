"""The late bindings between layers (rocketfilter.hooks): the facade registers the rocketmq
source for new sessions and the pull behind MessageStore.get_message; a failing hook is a
warning, not a lost session."""
from __future__ import annotations

import logging

import rocketfilter
from rocketfilter import hooks


def test_the_facade_binds_the_pull_and_the_source():
    assert hooks.get_message_function() is rocketfilter._get_message
    assert rocketfilter._register_source in hooks._SESSION_HOOKS


def test_a_failing_session_hook_warns_and_the_others_still_run(monkeypatch, caplog):
    seen = []

    def broken(spark):
        raise RuntimeError("no Python data sources here")

    monkeypatch.setattr(hooks, "_SESSION_HOOKS", [broken, seen.append])
    with caplog.at_level(logging.WARNING, logger="rocketfilter.hooks"):
        hooks.run_session_hooks("session")
    assert seen == ["session"]
    assert "could not set up this session (broken): no Python data sources here" in caplog.text


def test_no_hook_runs_while_suspended_and_they_run_again_after(monkeypatch):
    seen = []
    monkeypatch.setattr(hooks, "_SESSION_HOOKS", [seen.append])
    with hooks.session_hooks_suspended():
        with hooks.session_hooks_suspended():
            hooks.run_session_hooks("inner")
        hooks.run_session_hooks("outer")
    hooks.run_session_hooks("after")
    assert seen == ["after"]


def test_the_source_hook_warns_as_get_spark_always_did(caplog):
    with caplog.at_level(logging.WARNING, logger="rocketfilter.session"):
        rocketfilter._register_source(object())   # not a session: nothing to register with
    assert "could not register the rocketmq data source with this session" in caplog.text


def test_get_message_without_a_registered_pull_says_what_to_do(monkeypatch):
    monkeypatch.setattr(hooks, "_GET_MESSAGE", [])
    try:
        hooks.get_message_function()
    except RuntimeError as error:
        assert "no pull path registered" in str(error)
    else:
        raise AssertionError("expected a RuntimeError")
