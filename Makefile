# Two entry points do all set-up on a fresh machine:
#   make demo   - install into .venv what the demo needs (the package and the AG-UI validator, not the
#                 development tools), then run the main job on built-in data
#   make test   - install into .venv (and Debian's chromium, for the inspector's browser tests, when it is
#                 missing: tools/ensure_chromium), then run the whole test suite
#   make bench  - the benchmark (not part of the tests); results in bench/results/
#   make docs   - build the documentation site (docs/, mkdocs.yml) into site/ with mkdocs --strict
#   make test-a13n - install into .venv-a13n (Python 3.13, a13n-harness), generate real a13n-harness
#                    Runs afresh and run tests/a13n on them
#   make test-a13n-05 - install into .venv-a13n-05 (Python 3.13) a13n-service 0.0.94 (a13n-harness 0.5.4) and this
#                    package with its a13n05 extra, generate real a13n-harness 0.5 Runs afresh and run tests/a13n05
#                    (the adapter's round trip; the service's stored display and stream with upstream and swapped)
#   make test-upstream-05 - a13n-stream-protocol 0.5.4's own test suite against harness_agui.compat's 0.5 package
#   make test-a13n-service - a13n-service 0.0.94's own display-fold tests (no database) with the swap applied
#   make test-upstream - a13n-stream-protocol 0.21.0's own test suite (its sdist, fetched now and never kept)
#                    against harness_agui.compat installed under the name a13n_stream_protocol, a UserWarning
#                    (pydantic's serializer warnings, which upstream never gives) failing its test
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
A13N_VENV ?= .venv-a13n
A13N_PY := $(A13N_VENV)/bin/python

.PHONY: demo test screenshots docs test-a13n test-a13n-020 test-a13n-05 test-upstream-05 test-a13n-service test-upstream test-harness-ui bench lint clean

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $@

$(VENV)/.demo-installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet -e '.[demo]'
	touch $@

demo: $(VENV)/.demo-installed
	$(PY) -m harness_agui demo

test: $(VENV)/.installed
	tools/ensure_chromium
	$(PY) -m pytest -n auto

# The run inspector's screenshots and long-Run figures in docs/inspector/, taken anew (a plain test run leaves
# docs/ as it is).
screenshots: $(VENV)/.installed
	tools/ensure_chromium
	HARNESS_AGUI_WRITE_SCREENSHOTS=1 $(PY) -m pytest tests/test_inspect_browser.py

# The site is built in .venv (the dev extra has what the API reference's modules import) with the docs extra;
# --strict fails on a broken link, a missing page or a name mkdocstrings cannot find.
$(VENV)/.docs-installed: $(VENV)/.installed
	$(PY) -m pip install --quiet -e '.[dev,docs]'
	touch $@

docs: $(VENV)/.docs-installed
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --site-dir site

# a13n-harness needs Python 3.13. Tried in order: python3.13; pyenv's python3.13 shim with
# PYENV_VERSION=3.13.0 (the shim fails without it where no .python-version selects 3.13); any
# 3.13 interpreter in pyenv's versions directory.
FIND_PYTHON313 = for py in python3.13 "env PYENV_VERSION=3.13.0 python3.13" \
		$$(ls -d "$${PYENV_ROOT:-$$HOME/.pyenv}"/versions/3.13*/bin/python3.13 2>/dev/null); do \
	if $$py -c 'import sys; sys.exit(sys.version_info[:2] != (3, 13))' >/dev/null 2>&1; then echo "$$py"; exit 0; fi; \
done; exit 1

$(A13N_VENV)/.installed: pyproject.toml
	@py="$$($(FIND_PYTHON313))" || { \
		echo "make test-a13n needs Python 3.13 (tried python3.13, PYENV_VERSION=3.13.0 python3.13 and" \
		     "$${PYENV_ROOT:-$$HOME/.pyenv}/versions/3.13*/bin/python3.13); install Python 3.13 first" >&2; exit 1; }; \
	echo "make test-a13n: using $$py"; $$py -m venv $(A13N_VENV)
	$(A13N_PY) -m pip install --quiet --upgrade pip
	$(A13N_PY) -m pip install --quiet -e '.[a13n,dev]'
	touch $@

test-a13n: $(A13N_VENV)/.installed $(A13N_VENV)/.upstream
	@out="$$(mktemp -d)"; trap 'rm -rf "$$out"' EXIT; \
	$(A13N_PY) tools/make_a13n_fixtures.py --out "$$out" && \
	$(A13N_PY) -m pytest tests/a13n

# a13n-stream-protocol itself, beside the compat package, for the tests that compare the two (tests/a13n) and
# jsonschema for its own suite (make test-upstream). It pins the a13n-harness release .venv-a13n already has.
UPSTREAM_VERSION := 0.21.0
$(A13N_VENV)/.upstream: $(A13N_VENV)/.installed
	$(A13N_PY) -m pip install --quiet 'a13n-stream-protocol==$(UPSTREAM_VERSION)' 'jsonschema>=4.23,<5'
	touch $@

# a13n-harness 0.20.x (a13n-claw pins 0.20.1): the adapter's round trip, the producer tap and the visibility
# boundary of both vocabularies on real Runs of that release, in a venv of its own (the a13n extra allows
# >=0.20,<0.22). a13n-stream-protocol 0.21 itself needs a13n-harness 0.21, so the tests that compare with it
# skip here.
A13N_020_VENV ?= .venv-a13n-020
A13N_020_PY := $(A13N_020_VENV)/bin/python
A13N_020_VERSION := 0.20.1
$(A13N_020_VENV)/.installed: pyproject.toml
	@py="$$($(FIND_PYTHON313))" || { echo "make test-a13n-020 needs Python 3.13" >&2; exit 1; }; \
	$$py -m venv $(A13N_020_VENV)
	$(A13N_020_PY) -m pip install --quiet --upgrade pip
	$(A13N_020_PY) -m pip install --quiet -e '.[dev,a13n]' 'a13n-harness==$(A13N_020_VERSION)'
	$(A13N_020_PY) -c 'import importlib.metadata as m; v = m.version("a13n-harness"); assert v == "$(A13N_020_VERSION)", v'
	touch $@

test-a13n-020: $(A13N_020_VENV)/.installed
	$(A13N_020_PY) -m pytest -p no:cacheprovider tests/a13n/test_adapter.py tests/a13n/test_compat_events.py \
		tests/a13n/test_producer_tap.py tests/a13n/test_visibility.py

# a13n-harness 0.5 (a13n-service 0.0.94 pins 0.5.4): the adapter's round trip on real Runs of that release, made
# afresh by tools/make_a13n05_runs.py, and what the service's own fold stores of them with upstream
# a13n-stream-protocol 0.5.4 and with the compat swap (tools/a13n_service_display.py), in a venv of its own holding
# a13n-service 0.0.94 itself and this package with its a13n05 extra (the install line docs/a13n.md gives, which pip
# must accept beside the service's pins). Neither PostgreSQL nor Redis is needed: the fold runs in process.
A13N_05_VENV ?= .venv-a13n-05
A13N_05_PY := $(A13N_05_VENV)/bin/python
A13N_SERVICE_VERSION := 0.0.94
$(A13N_05_VENV)/.installed: pyproject.toml
	@py="$$($(FIND_PYTHON313))" || { echo "make test-a13n-05 needs Python 3.13" >&2; exit 1; }; \
	$$py -m venv $(A13N_05_VENV)
	$(A13N_05_PY) -m pip install --quiet --upgrade pip
	$(A13N_05_PY) -m pip install --quiet 'a13n-service==$(A13N_SERVICE_VERSION)' -e '.[a13n05]' \
		'pytest>=8' 'hypothesis>=6.100'
	$(A13N_05_PY) -c 'import importlib.metadata as m; v = m.version("a13n-harness"); assert v.startswith("0.5."), v'
	touch $@

test-a13n-05: $(A13N_05_VENV)/.installed
	$(A13N_05_PY) -m pytest -p no:cacheprovider tests/a13n05

# a13n-stream-protocol 0.5.4's own test suite (its sdist, fetched now and never kept) against
# harness_agui.compat.a13n_stream_protocol_05 installed under the name a13n_stream_protocol, in the venv above (which
# has a13n-harness 0.5.4); a UserWarning fails a test, but for pydantic-ai's deprecation of the RetryPromptPart one of
# upstream's tests builds (it fails upstream's own run under -W error::UserWarning too).
UPSTREAM_05_VERSION := 0.5.4
$(A13N_05_VENV)/.upstream: $(A13N_05_VENV)/.installed
	$(A13N_05_PY) -m pip install --quiet 'jsonschema>=4.23,<5'
	touch $@

test-upstream-05: $(A13N_05_VENV)/.upstream
	@work="$$(mktemp -d)"; trap 'rm -rf "$$work"' EXIT; \
	$(A13N_05_PY) -m pip download --quiet --no-binary :all: --no-deps \
		'a13n-stream-protocol==$(UPSTREAM_05_VERSION)' -d "$$work" && \
	tar -xzf "$$work"/a13n_stream_protocol-$(UPSTREAM_05_VERSION).tar.gz -C "$$work" && \
	cd "$$work"/a13n_stream_protocol-$(UPSTREAM_05_VERSION) && \
	"$(CURDIR)/$(A13N_05_PY)" -m pytest -p harness_agui.compat.pytest_plugin -p no:cacheprovider -q \
		-W error::UserWarning -W default::pydantic_ai._warnings.PydanticAIDeprecationWarning tests

# a13n-service 0.0.94's own tests that need neither PostgreSQL nor Redis and reach its display fold
# (tests/test_runs_values.py: 43 tests of DisplayFold, the display budget and input folding), from its sdist (fetched
# now and never kept), with the swap applied by the pytest plugin. Its conftest imports testcontainers (its
# database tests start PostgreSQL and Redis in Docker; those are not run here).
$(A13N_05_VENV)/.service-tests: $(A13N_05_VENV)/.installed
	$(A13N_05_PY) -m pip install --quiet 'testcontainers>=4.10,<5'
	touch $@

test-a13n-service: $(A13N_05_VENV)/.service-tests
	$(A13N_05_PY) -c 'import harness_agui.compat as c; c.install(); import a13n_service.runs.display as d; \
		m = d.HarnessAguiStreamObserver.__module__; assert m.startswith("harness_agui.compat.a13n_stream_protocol_05"), m'
	@work="$$(mktemp -d)"; trap 'rm -rf "$$work"' EXIT; \
	$(A13N_05_PY) -m pip download --quiet --no-binary :all: --no-deps \
		'a13n-service==$(A13N_SERVICE_VERSION)' -d "$$work" && \
	tar -xzf "$$work"/a13n_service-$(A13N_SERVICE_VERSION).tar.gz -C "$$work" && \
	cd "$$work"/a13n_service-$(A13N_SERVICE_VERSION) && \
	"$(CURDIR)/$(A13N_05_PY)" -m pytest -p harness_agui.compat.pytest_plugin -p no:cacheprovider -q \
		tests/test_runs_values.py

# a13n-harness-ui 0.21 (a Host of a13n-stream-protocol) in a venv of its own, with this package beside it:
# tools/harness_ui_transcript.py runs six offline scenarios through it (a retry, a subagent, an approval
# answered, a supplement, parallel calls, a cancel) with upstream, then with the compat package behind upstream's
# name, and tests/harness_ui compares the display transcripts it stored and the live events it sent, with a
# guard that makes any attempt to reach the network an error (and, where `unshare -rn` works, no network at all).
HARNESS_UI_VENV ?= .venv-harness-ui
HARNESS_UI_PY := $(HARNESS_UI_VENV)/bin/python
HARNESS_UI_VERSION := 0.21.0
$(HARNESS_UI_VENV)/.installed: pyproject.toml
	@py="$$($(FIND_PYTHON313))" || { echo "make test-harness-ui needs Python 3.13" >&2; exit 1; }; \
	$$py -m venv $(HARNESS_UI_VENV)
	$(HARNESS_UI_PY) -m pip install --quiet --upgrade pip
	$(HARNESS_UI_PY) -m pip install --quiet 'a13n-harness-ui==$(HARNESS_UI_VERSION)' \
		'a13n-stream-protocol==$(UPSTREAM_VERSION)' 'pytest>=8' 'hypothesis>=6.100' -e .
	touch $@

test-harness-ui: $(HARNESS_UI_VENV)/.installed
	$(HARNESS_UI_PY) -m pytest -p no:cacheprovider tests/harness_ui

# Upstream's suite from its sdist, in a temporary folder, with the compat package loaded under upstream's name
# by the pytest plugin before any test module imports it.
test-upstream: $(A13N_VENV)/.upstream
	@work="$$(mktemp -d)"; trap 'rm -rf "$$work"' EXIT; \
	$(A13N_PY) -m pip download --quiet --no-binary :all: --no-deps \
		'a13n-stream-protocol==$(UPSTREAM_VERSION)' -d "$$work" && \
	tar -xzf "$$work"/a13n_stream_protocol-$(UPSTREAM_VERSION).tar.gz -C "$$work" && \
	cd "$$work"/a13n_stream_protocol-$(UPSTREAM_VERSION) && \
	"$(CURDIR)/$(A13N_PY)" -m pytest -p harness_agui.compat.pytest_plugin -p no:cacheprovider -q \
		-W error::UserWarning tests

bench: $(VENV)/.installed
	$(PY) -m pip install --quiet -e '.[bench]'
	$(PY) -m bench.run

lint: $(VENV)/.installed
	$(PY) -m ruff check harness_agui tests tools examples bench
	$(PY) -m mypy

clean:
	rm -rf $(VENV) $(A13N_VENV) $(A13N_020_VENV) $(A13N_05_VENV) $(HARNESS_UI_VENV) build site *.egg-info .pytest_cache .hypothesis
