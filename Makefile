# Two commands matter: `make book` builds the book, `make test` checks everything (`make quick`
# checks the library alone, in under a minute). Each creates .venv from the pinned
# requirements.txt on first use.

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# The pages with code, each page of book/ with a code cell: the chapters, the generated formula
# reference and the reference tables (not the glossary, the API reference or the bibliography,
# which are plain MyST).
CHAPTERS := $(shell grep -l '{code-cell}' book/*.md)
EXERCISES := $(wildcard lib/inference_arithmetic/exercises/*.py)
JOBS ?= 2
# Strict: warnings are errors, broken references are reported, all problems in one run.
BOOK_FLAGS := -W -n --keep-going
# Python keeps each module it compiles in __pycache__/ (ignored by git) even where the
# environment asks it not to: every test process, kernel and command it runs would otherwise
# compile the library and pytest rewrite the tests again, seconds each.
unexport PYTHONDONTWRITEBYTECODE

.PHONY: book execute shown test test-library test-book test-book-niced quick lint format notebooks browser browser-check lab \
	bench bands reference measure linkcheck pdf clean help

help:
	@echo "make book       build the HTML book (executes every chapter; warnings are errors)"
	@echo "make test       ruff, the strict book build (runs every chapter), the tests, the browser test"
	@echo "                (installs Debian's chromium-headless-shell for the browser test where it can)"
	@echo "make quick      ruff and the library's tests but the slow ones (tests/lib, the doctests):"
	@echo "                no book, in under a minute"
	@echo "make notebooks  the chapters as .ipynb, student and instructor editions, in _build/notebooks/"
	@echo "                (runs the chapters first, as make book does, for the numbers in the text)"
	@echo "make execute    run the chapters whose code, library or data changed, into the cache"
	@echo "make shown      each chapter's shown code alone in a fresh kernel, as a reader runs it (nbval)"
	@echo "make lab        JupyterLab on the chapters"
	@echo "make bench      import time, first and warm calculate, steady state, plan, compiled"
	@echo "                formula vs numpy, a step model, widget update time, the command"
	@echo "                line's first answer"
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
# installs them. Either way the same pinned versions. Nothing is compiled ahead: Python
# compiles each module to bytecode the first time a process imports it and keeps it, a few
# thousand of the 7,000 installed (compiling them all took 15 CPU-seconds, 8 s before anything
# else could start); and each chapter and each test compiles the formulas it needs into the
# disk cache (inference_arithmetic.core.cache) as it runs, two at a time.
UV_VERSION := 0.13.9
PIP_QUIET := --quiet --disable-pip-version-check

$(STAMP): requirements.txt pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install $(PIP_QUIET) uv==$(UV_VERSION) && eval "$$($(BIN)/python \
		tools/uv_env.py)" && $(BIN)/uv pip install --quiet --python $(BIN)/python \
		--index-strategy unsafe-best-match -r requirements.txt || { \
		echo "uv could not install requirements.txt: pip installs it"; \
		$(BIN)/python -m pip install $(PIP_QUIET) --no-compile -r requirements.txt; }
	touch $@

# The chapters run JOBS at a time into the build's execution cache (tools/execute.py, around
# jupyter-cache, with the reader myst-nb uses); the build then reads them from it, and so do the
# student notebooks (their glued numbers). Each chapter's record keeps what its outputs depend
# on: its code, the library's code, the installed packages, and every file of the repository
# it read while it ran; a chapter runs again when any of them changed, and only then. Each runs
# in a fresh kernel forked from one that has imported what they all import (tools/kernel_fork.py:
# 4 of a small page's 5 seconds went to imports). A chapter that fails is not cached: its
# traceback is printed and make stops.
CACHE := _build/.jupyter_cache

execute: $(STAMP)
	$(BIN)/python tools/execute.py --jobs $(JOBS) --timeout 600 --cache $(CACHE) $(CHAPTERS)

# Each page's shown code run alone in a fresh kernel, as a reader runs it (tools/shown.py, with
# nbval). The book's execution checks the names already, at no cost (tools/shown_alone.py: a
# shown cell sees only what shown cells bound); this runs every page a second time, so it is not
# part of `make test`. After `execute`, which leaves the formulas compiled on disk.
SHOWN := _build/shown

shown: execute
	$(BIN)/python tools/shown.py $(SHOWN) $(CHAPTERS)
	$(PYTEST) -p no:cacheprovider --nbval-lax $(SHOWN)

# Sphinx leaves the page of a renamed or removed chapter in place: it goes first, so that the
# built book (and the layout tests, which read every page in it) has only the book's pages.
book: execute
	@for page in _build/html/book/*.html; do [ -e "$$page" ] || continue; \
		[ -e "book/$$(basename "$$page" .html).md" ] || rm -f "$$page"; done
	$(BIN)/jupyter-book build . $(BOOK_FLAGS)
	@echo "Book: $(CURDIR)/_build/html/index.html"

# The whole book as one PDF (pdflatex with Debian's texlive, installed when missing), then a
# check that it holds every chapter.
pdf: $(STAMP)
	@command -v latexmk >/dev/null && command -v pdftotext >/dev/null || \
		(apt-get update -qq && apt-get install -y -qq texlive-latex-recommended \
		texlive-latex-extra texlive-fonts-recommended latexmk poppler-utils)
	$(BIN)/jupyter-book build . --builder pdflatex
	$(BIN)/python -m pytest -q -p no:cacheprovider tests/book/check_pdf.py
	@echo "PDF: $$(ls $(CURDIR)/_build/latex/*.pdf)"

# External links need the network, so this is not part of `make test`; internal references
# and anchors are checked by the strict build.
linkcheck: $(STAMP)
	$(BIN)/jupyter-book build . --builder linkcheck

# All at once, after `execute` (which `make book` shares, so no chapter runs twice): one process
# converts every chapter; the student edition prints each glued number as the book does, read
# from the execution cache, so the notebooks are written again whenever the chapters ran.
notebooks: execute
	$(BIN)/python tools/notebooks.py _build/notebooks $(CHAPTERS)
	@echo "Notebooks: $(CURDIR)/_build/notebooks/student/ and .../instructor/"

# The chapters' code is linted and format-checked in the class notebooks' cells, in both editions
# (tools/notebooks.py: the instructor's is the chapter, the student's has an answer cell in place
# of each solution), written from the MyST sources without running anything (--code): lint
# never waits for the book. `make format` formats the library, the tests and the chapters' code
# cells in place.
LINTED := $(foreach edition,student instructor,\
	$(patsubst book/%.md,_build/lint/$(edition)/%.ipynb,$(CHAPTERS)))

$(LINTED) &: $(CHAPTERS) $(EXERCISES) tools/notebooks.py tools/myst_plain.py $(STAMP)
	$(BIN)/python tools/notebooks.py --code _build/lint $(CHAPTERS)

lint: $(STAMP) $(LINTED)
	$(BIN)/ruff check lib tests tools $(LINTED)
	$(BIN)/ruff format --check lib tests tools $(LINTED)

format: $(STAMP)
	$(BIN)/ruff format lib tests tools
	for chapter in $(CHAPTERS); do \
		$(BIN)/jupytext --quiet --pipe "$(CURDIR)/$(BIN)/ruff format -" $$chapter || exit 1; \
	done

# pytest on JOBS workers, each test file on one (a file's tests share what they compute);
# PYTEST_FLAGS adds options (e.g. --durations=20, -k calculator). The library's tests are
# tests/lib and the doctests in lib/; the book's (its sources, notebooks and built HTML) are
# tests/book.
# tests/conftest.py orders the files, longest first; xdist keeps that order.
DIST ?= loadfile
PYTEST = $(BIN)/python -m pytest -n $(JOBS) --dist $(DIST) --no-loadscope-reorder $(PYTEST_FLAGS)

# The library's tests but those marked slow (tests/conftest.py), which `make test` runs.
quick: lint
	$(PYTEST) -m "not slow" lib tests/lib

# The browser tests drive Debian's headless Chromium, chromium-headless-shell (the same Blink
# without the browser around it: the book's tests take a quarter less CPU than under the full
# chromium, which they take where the shell is missing; $CHROMIUM names another build). The
# shell is installed here where this user can (root, with apt-get); otherwise make goes on with
# a full chromium if there is one, else stops at once and says what to do (browser-check, which
# installs nothing). IA_SKIP_BROWSER=1 leaves the browser tests out (pytest reports them
# skipped).
HAVE_SHELL := { [ "$${IA_SKIP_BROWSER:-0}" = 1 ] || [ -x "$${CHROMIUM:-}" ] \
	|| command -v chromium-headless-shell >/dev/null 2>&1; }
HAVE_BROWSER := { $(HAVE_SHELL) || command -v chromium >/dev/null 2>&1; }
CAN_INSTALL := { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; }
browser-check:
	@if $(HAVE_BROWSER) || $(CAN_INSTALL); then exit 0; fi; \
	echo "make test: the browser tests need Chromium, and only root can install it here." >&2; \
	echo "  Install Debian's: sudo apt-get install chromium-headless-shell" >&2; \
	echo "  or point CHROMIUM at a Chromium build: make test CHROMIUM=/path/to/chrome" >&2; \
	echo "  or leave the browser tests out: make test IA_SKIP_BROWSER=1" >&2; \
	exit 1

# Without the packages Debian recommends beside it (avahi, CUPS, Samba's libraries, udev, Perl
# modules: 107 packages against 19), which a headless browser never uses; the fonts are the
# system's either way, so the pages lay out alike.
browser: browser-check
	@if $(HAVE_SHELL) || ! $(CAN_INSTALL); then exit 0; fi; \
	echo "Installing Debian's headless Chromium for the browser tests" \
		"(apt-get install chromium-headless-shell)"; \
	apt-get update -qq && apt-get install -y -qq --no-install-recommends \
		chromium-headless-shell >/dev/null

# First the check that may stop everything at once. Then, side by side: lint; the library's
# tests, which need no chapter, in one process (pytest -n 0: a single worker needs no
# controller beside it); and the book's chain (the chapters run, each once, `execute`; the
# book is built; its tests read the built HTML and the class notebooks, taking their numbers
# from that execution), lower in priority (BOOK_NICE, which the chapters' kernels keep in
# their own sessions: tools/kernel_fork.py). So the library's tests have a core to themselves
# and end first, while the book's chain takes what is left and then both cores: the machine is
# busy to the end either way, and the library's answer comes sooner. Each process imports and
# warms the library again, which is why the library's tests take one. Chromium installs
# meanwhile (mostly waiting on the network and dpkg), beside the environment, and only the
# book's tests wait for it. Each run's output is printed whole when it ends (-Otarget),
# pytest's summary last.
test: browser-check
	@$(MAKE) --no-print-directory -j3 -Otarget lint test-library test-book-niced LIBRARY_JOBS=0

BOOK_NICE ?= 5
test-book-niced: $(STAMP) browser
	@nice -n $(BOOK_NICE) $(MAKE) --no-print-directory test-book

# The library's tests on LIBRARY_JOBS workers (JOBS; `make test` says 0: in pytest's own process).
LIBRARY_JOBS ?= $(JOBS)
test-library: $(STAMP)
	$(PYTEST) -n $(LIBRARY_JOBS) lib tests/lib

test-book: book notebooks browser
	$(PYTEST) tests/book

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
# tests/lib/test_residuals.py fails until the file is the recomputation.
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
