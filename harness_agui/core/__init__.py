"""The pure core: the source model, the order of a Run's history, the
immutable projection state, the reducer, the processor contract and the
observer shell. Nothing here does I/O; everything above builds on it."""
