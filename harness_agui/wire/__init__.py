"""Formats on the wire: the source items' JSON lines (``codec``), journal
files of such lines (``jsonl``) and AG-UI output encodings (``agui``)."""
