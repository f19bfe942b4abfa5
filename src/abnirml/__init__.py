"""abnirml: diagnose how ranking models behave.

The package root stays import-light on purpose: nothing heavy (torch, spaCy, SQLite
connections) is touched until a caller asks for it.
"""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__"]
