"""The ``memoryd`` command line as users run it: a real process per command."""
