"""Group analysis on top of the pull path: :func:`~.replay.replay_group`,
:func:`~.diagnosis.diagnose_group` and :func:`~.explain_message.explain_message`, with their plans,
outcomes, traces and reports (docs/architecture.md). ``rocketfilter.replay_group`` and friends
hand these out."""
