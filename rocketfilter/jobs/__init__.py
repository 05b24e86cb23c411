"""The logic of the ``rocketfilter`` command's jobs (the CLI and ``spark_jobs/`` parse arguments
and call these)."""
