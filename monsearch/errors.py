"""Errors a user can act on. The CLI prints them without a traceback."""


class MonsearchError(Exception):
    """Base for every error caused by input, configuration or environment.

    ``exit_code`` is what the CLI exits with: 2 for bad input or usage,
    3 for a refused operation (e.g. a sealed test already opened).
    """

    exit_code = 2
