"""Deprecated name of ``aiayn.numpy_twin`` (the NumPy twin), kept for code that imports it.

"Reference" also means the reference translation, so the twin's package is now
``aiayn.numpy_twin``; this alias re-exports it and warns once. It goes away in aiayn
``REMOVED_IN`` (0.1.0 had the twin under this name; 0.2.0 has both).
"""

import warnings

from aiayn.numpy_twin import *  # noqa: F403
from aiayn.numpy_twin import __all__  # noqa: F401

REMOVED_IN = "0.3.0"

warnings.warn(
    f"aiayn.reference is now aiayn.numpy_twin, and aiayn {REMOVED_IN} removes the old name; "
    "import aiayn.numpy_twin instead",
    DeprecationWarning,
    stacklevel=2,
)
