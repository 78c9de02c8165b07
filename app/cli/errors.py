"""What a command-line mistake raises (the message names the value and the fix)."""


class UsageError(Exception):
    """A bad command-line value; the message names it and the fix."""
