# The two commands of the README: `make demo` (main job) and `make test`.
# Both create .venv and install the project with every extra on first use.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
OUT ?= out/demo
DEMO_RANKERS ?= --ranker bm25 --ranker ql --ranker tfidf --ranker biencoder --ranker wmd:glove \
	--ranker knrm --ranker lgbm

.PHONY: setup demo test lint bench clean

setup: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[all,dev]'
	touch $@

demo: setup
	$(VENV)/bin/abnirml run --collection demo $(DEMO_RANKERS) --probe all --out $(OUT)
	@echo "report: $(OUT)/report.md"

test: setup
	$(PY) -m pytest -q

lint: setup
	$(VENV)/bin/ruff check src tests benchmarks

bench: setup
	$(PY) benchmarks/run.py

clean:
	rm -rf $(VENV) out test-output
