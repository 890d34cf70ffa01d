# Two entry points do all set-up on a fresh machine:
#   make demo   - install into .venv, then run the main job on built-in data
#   make test   - install into .venv, then run the whole test suite
#   make bench  - the benchmark (not part of the tests); results in bench/results/
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python

.PHONY: demo test bench lint clean

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $@

demo: $(VENV)/.installed
	$(PY) -m harness_agui demo

test: $(VENV)/.installed
	$(PY) -m pytest

bench: $(VENV)/.installed
	$(PY) -m pip install --quiet -e '.[bench]'
	$(PY) -m bench.run

lint: $(VENV)/.installed
	$(PY) -m ruff check harness_agui tests examples bench
	$(PY) -m mypy

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .hypothesis
