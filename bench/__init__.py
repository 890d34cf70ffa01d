"""The harness-agui benchmark: ``python -m bench.run`` (see bench/run.py)."""
