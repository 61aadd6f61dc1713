"""Errors a user can cause (bad files, bad flags, mismatched checkpoints, a missing extra).

The CLI prints their message on one line and exits with status 2, without a traceback. The
message names the file, line or value at fault; for a missing optional dependency, the
command that installs it (``require``).
"""

from __future__ import annotations

import importlib
from types import ModuleType


class UserError(Exception):
    """A problem with the user's input, files or flags, explained in the message."""


def missing_extra(name: str, extra: str) -> UserError:
    """The one line for an optional module that is not installed: its install command."""
    module = name.split(".")[0]
    return UserError(f"{module} is not installed; install it with: pip install 'aiayn[{extra}]'")


def require(name: str, extra: str) -> ModuleType:
    """Import an optional module of pyproject.toml's ``extra``, or a UserError naming it."""
    try:
        return importlib.import_module(name)
    except ImportError:
        raise missing_extra(name, extra) from None
