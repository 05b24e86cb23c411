"""The jobs behind the ``rocketfilter`` command and the ``spark_jobs/*.py`` scripts: one module per
command (``demo``, ``import_store``, ``topics``, ``describe``, ``replay``, ``pull``, ``offsets``,
``lint``, ``groups``, ``why``, ``maintenance``: promote and backfill), the options and steps they
share in :mod:`.common`, and the one-line error that names its cause in :mod:`.errors`.

Each module exposes ``register(subparsers)`` (the ``rocketfilter <command>`` parser, with
``handler(args, spark=None) -> int`` set on it) and ``main(argv=None, *, spark=None, prog=...)``,
which runs the command as a program of its own: what a spark-submit script calls, and what tests
call in-process with the suite's session.
"""
