"""Deprecated name of ``aiayn.numpy_twin`` (the NumPy twin), kept for code that imports it.

"Reference" also means the reference translation, so the twin's package is now
``aiayn.numpy_twin``; this alias re-exports it and warns once.
"""

import warnings

from aiayn.numpy_twin import *  # noqa: F403
from aiayn.numpy_twin import __all__  # noqa: F401

warnings.warn(
    "aiayn.reference is now aiayn.numpy_twin; import that instead",
    DeprecationWarning,
    stacklevel=2,
)
