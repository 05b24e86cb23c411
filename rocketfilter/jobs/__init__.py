"""The command line's jobs: each module parses its arguments (``add_*_arguments``), checks them
before any Spark work, and runs (``*_command``); ``rocketfilter.cli`` registers them."""
