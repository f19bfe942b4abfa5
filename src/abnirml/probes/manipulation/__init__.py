"""Textual-manipulation probes (``tmp:``): a document against an edited copy of itself."""
