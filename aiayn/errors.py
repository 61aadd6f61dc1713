"""Errors a user can cause (bad files, bad flags, mismatched checkpoints).

The CLI prints their message on one line and exits with status 2, without a traceback. The
message names the file, line or value at fault.
"""


class UserError(Exception):
    """A problem with the user's input, files or flags, explained in the message."""
