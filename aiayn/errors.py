"""Errors a user can cause (bad files, bad flags, mismatched checkpoints, a missing extra).

The CLI prints their message on one line and exits with status 2, without a traceback. The
message names the file, line or value at fault; for a missing optional dependency, the
command that installs it (``require``).
"""

from __future__ import annotations

import importlib
from types import ModuleType

# The modules of pyproject.toml's optional extras that a verb imports, and the extra of each
# (tests/test_errors.py holds this table to pyproject.toml).
OPTIONAL = {
    "starlette": "explore",  # aiayn explore: the page's server
    "uvicorn": "explore",
    "ctranslate2": "serve",  # aiayn export, translate/evaluate --engine
    "onnx": "serve",
    "onnxruntime": "serve",
}


class UserError(Exception):
    """A problem with the user's input, files or flags, explained in the message."""


def missing_extra(name: str) -> UserError:
    """The one line for an optional module that is not installed: its install command."""
    module = name.split(".")[0]
    return UserError(
        f"{module} is not installed; install it with: pip install 'aiayn[{OPTIONAL[module]}]'"
    )


def require(name: str) -> ModuleType:
    """Import an optional module (a key of ``OPTIONAL``), or a UserError naming its install."""
    try:
        return importlib.import_module(name)
    except ImportError:
        raise missing_extra(name) from None
