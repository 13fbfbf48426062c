# Two commands matter: `make book` builds the book, `make test` checks everything.
# Both create .venv from the pinned requirements.txt on first use.

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# The pages with code: the chapters and the generated formula reference (not the glossary,
# the API reference or the bibliography, which are plain MyST).
CHAPTERS := $(wildcard book/[0-9][0-9]-*.md) book/appendix-formulas.md
# Two editions of each (tools/notebooks.py): the instructor's is the chapter, the student's has
# an answer cell in place of each solution.
NOTEBOOKS := $(foreach edition,student instructor,\
	$(patsubst book/%.md,_build/notebooks/$(edition)/%.ipynb,$(CHAPTERS)))
EXERCISES := $(wildcard lib/inference_arithmetic/exercises/*.py)
JOBS ?= 2
# Strict: warnings are errors, broken references are reported, all problems in one run.
BOOK_FLAGS := -W -n --keep-going

.PHONY: book execute test lint format unit notebooks lab bench bands reference measure linkcheck pdf clean help

help:
	@echo "make book       build the HTML book (executes every chapter; warnings are errors)"
	@echo "make test       ruff, the strict book build (runs every chapter), the tests, the browser test"
	@echo "make notebooks  the chapters as .ipynb, student and instructor editions, in _build/notebooks/"
	@echo "                (runs the chapters first, as make book does, for the numbers in the text)"
	@echo "make lab        JupyterLab on the chapters"
	@echo "make bench      import time, first and warm calculate, steady state, plan, compiled"
	@echo "                formula vs numpy, a step model, widget update time"
	@echo "make bands      rewrite the predictions' error bands from the validation set's residuals"
	@echo "make format     ruff format over the library, the tests and the chapters' code"
	@echo "make pdf        the whole book as one PDF (installs texlive when missing)"
	@echo "make linkcheck  check the external links (needs the network)"
	@echo "make reference  re-measure the registry models with torch + transformers"
	@echo "make measure    time a small transformer on this machine; predicted vs measured"
	@echo "make clean      remove _build/, .venv/, tests/reference/.venv/ and tools/measure/.venv/"

# uv installs the requirements in seconds where pip takes a minute: the environment's pip
# installs uv (UV_VERSION) from the index pip is set to use, and uv is handed pip's indexes
# (tools/uv_env.py: uv reads no pip configuration). Where uv cannot be had or fails, pip
# installs them. Either way the same pinned versions, compiled to bytecode as pip does.
# Then the calculator's formulas of every registry model are compiled (and printed for its page)
# into the disk cache (inference_arithmetic.core.cache), so that a model's first calculation
# in a process is fast: the report's and steady state's formulas, the keyword functions' (tensor
# and pipeline) and the page's data, one process each, side by side.
UV_VERSION := 0.13.9
PIP_QUIET := --quiet --disable-pip-version-check
WARM = $(BIN)/python -c "import inference_arithmetic as ia; ia.$(1).warm()"

$(STAMP): requirements.txt pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install $(PIP_QUIET) uv==$(UV_VERSION) && eval "$$($(BIN)/python \
		tools/uv_env.py)" && $(BIN)/uv pip install --quiet --python $(BIN)/python \
		--compile-bytecode --index-strategy unsafe-best-match -r requirements.txt || { \
		echo "uv could not install requirements.txt: pip installs it"; \
		$(BIN)/python -m pip install $(PIP_QUIET) -r requirements.txt; }
	$(call WARM,serving) & formulas=$$!; $(call WARM,timing) & timing=$$!; \
		$(call WARM,calculator); page=$$?; wait $$formulas && wait $$timing && exit $$page
	touch $@

# The execution cache is keyed on each chapter's text, not on the library it imports: drop it
# whenever the library changes, or a chapter could show results of an older library. Sphinx's
# environment too: it re-reads only pages whose source changed, and would keep old outputs.
# The page's scripts (page/*.js) are the library too: chapter 14's output embeds them.
_build/.library-stamp: $(shell find lib -name '*.py' -o -name '*.js') $(STAMP)
	rm -rf _build/.jupyter_cache _build/.doctrees
	@mkdir -p _build && touch $@

# The chapters run two at a time (jupyter-cache's parallel executor, with the reader myst-nb
# uses) into the build's execution cache; the build then reads them from it, and so do the
# student notebooks (their glued numbers). A chapter that fails is not cached, so the build
# runs it again and fails on it with its traceback.
JCACHE := $(BIN)/jcache
CACHE := _build/.jupyter_cache

execute: $(STAMP) _build/.library-stamp
	yes | $(JCACHE) notebook -p $(CACHE) add -r myst_nb_md $(CHAPTERS) > /dev/null
	$(JCACHE) project -p $(CACHE) execute -e local-parallel -t 300

book: execute
	$(BIN)/jupyter-book build . $(BOOK_FLAGS)
	@echo "Book: $(CURDIR)/_build/html/index.html"

# The whole book as one PDF (pdflatex with Debian's texlive, installed when missing), then a
# check that it holds every chapter.
pdf: $(STAMP)
	@command -v latexmk >/dev/null && command -v pdftotext >/dev/null || \
		(apt-get update -qq && apt-get install -y -qq texlive-latex-recommended \
		texlive-latex-extra texlive-fonts-recommended latexmk poppler-utils)
	$(BIN)/jupyter-book build . --builder pdflatex
	$(BIN)/python -m pytest -q -p no:cacheprovider tests/check_pdf.py
	@echo "PDF: $$(ls $(CURDIR)/_build/latex/*.pdf)"

# External links need the network, so this is not part of `make test`; internal references
# and anchors are checked by the strict build.
linkcheck: $(STAMP)
	$(BIN)/jupyter-book build . --builder linkcheck

# All at once (a grouped target): one process converts every chapter whose source changed.
# The student edition prints each glued number as the book does, read from the execution
# cache: the chapters run first (`execute`, which `make book` shares, so none runs twice).
$(NOTEBOOKS) &: $(CHAPTERS) $(EXERCISES) tools/notebooks.py tools/myst_plain.py \
		book/references.bib _build/.library-stamp | execute
	$(BIN)/python tools/notebooks.py _build/notebooks $(CHAPTERS)

notebooks: $(NOTEBOOKS)
	@echo "Notebooks: $(CURDIR)/_build/notebooks/student/ and .../instructor/"

# The chapters' code is linted and format-checked through their generated notebooks;
# `make format` formats the library, the tests and the chapters' code cells in place.
lint: $(NOTEBOOKS)
	$(BIN)/ruff check lib tests tools $(NOTEBOOKS)
	$(BIN)/ruff format --check lib tests tools $(NOTEBOOKS)

format: $(STAMP)
	$(BIN)/ruff format lib tests tools
	for chapter in $(CHAPTERS); do \
		$(BIN)/jupytext --quiet --pipe "$(CURDIR)/$(BIN)/ruff format -" $$chapter || exit 1; \
	done

# pytest on JOBS workers; PYTEST_FLAGS adds options (e.g. --durations=20, -k calculator).
DIST ?= loadfile
PYTEST = $(BIN)/python -m pytest -n $(JOBS) --dist $(DIST) $(PYTEST_FLAGS) lib tests

unit: $(STAMP) $(NOTEBOOKS)
	$(PYTEST)

# The book build comes before pytest, whose tests read the built HTML; pytest's summary is
# the last thing printed.
# The build executes every chapter once (a failing cell fails it, with its traceback); the
# notebooks, which lint reads, take their numbers from that execution; the tests then check
# what it made, and that the class notebooks hold the chapters' code, without running them.
test: book lint $(NOTEBOOKS)
	$(PYTEST)

# JupyterLab opens the chapters' .md sources as notebooks (jupytext's viewer by default).
LAB_SETTINGS := $(VENV)/share/jupyter/lab/settings/overrides.json
$(VENV)/.lab-installed: requirements-lab.txt tools/jupyterlab-settings.json $(STAMP)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -r requirements-lab.txt
	@mkdir -p $(dir $(LAB_SETTINGS))
	cp tools/jupyterlab-settings.json $(LAB_SETTINGS)
	touch $@

lab: $(VENV)/.lab-installed
	$(BIN)/jupyter lab --notebook-dir=book

bench: $(STAMP)
	$(BIN)/python tests/bench.py

# The band every prediction carries: the 10-90% range of the validation set's residuals at the
# library's defaults, shipped as serving/data/bands.json. Run it when the predictions change;
# tests/test_residuals.py fails until the file is the recomputation.
bands: $(STAMP)
	$(BIN)/python tools/bands.py

# The ground truth the library's tests compare to: parameter counts, FLOP-counter totals and
# KV-cache bytes of every registry model, measured with transformers on PyTorch's meta device.
# It has its own environment (torch, CPU wheel); `make test` reads only the committed JSON.
REF := tests/reference
REF_BIN := $(REF)/.venv/bin
REF_STAMP := $(REF)/.venv/.installed

$(REF_STAMP): $(REF)/requirements.txt
	$(PYTHON) -m venv $(REF)/.venv
	$(REF_BIN)/python -m pip install --quiet --disable-pip-version-check -r $(REF)/requirements.txt
	touch $@

reference: $(REF_STAMP)
	$(REF_BIN)/python $(REF)/make_reference.py
	$(REF_BIN)/python $(REF)/families.py
	@echo "Reference: $(CURDIR)/lib/inference_arithmetic/models/reference/measured.json"

# This machine as a lab: its achieved FLOP/s and bandwidth, and the times of a small
# random-weight Llama, measured with torch (its own environment, the CPU wheel) into
# lib/inference_arithmetic/validation/data/this_machine.json; then the library (.venv, no
# torch) predicts every case from the measured figures and prints predicted against measured.
# MEASURE_FLAGS passes options to the harness, e.g. MEASURE_FLAGS=--quick.
MEASURE := tools/measure
MEASURE_BIN := $(MEASURE)/.venv/bin
MEASURE_STAMP := $(MEASURE)/.venv/.installed
MEASURED ?= lib/inference_arithmetic/validation/data/this_machine.json

$(MEASURE_STAMP): $(MEASURE)/requirements.txt
	$(PYTHON) -m venv $(MEASURE)/.venv
	$(MEASURE_BIN)/python -m pip install --quiet --disable-pip-version-check -r $(MEASURE)/requirements.txt
	touch $@

measure: $(MEASURE_STAMP) $(STAMP)
	$(MEASURE_BIN)/python $(MEASURE)/measure.py --output $(MEASURED) $(MEASURE_FLAGS)
	$(BIN)/python $(MEASURE)/report.py $(MEASURED)

clean:
	rm -rf _build $(VENV) $(REF)/.venv $(MEASURE)/.venv
