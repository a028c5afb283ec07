# plone_pgcatalog: the two commands of the README, and a few more.
#
#   make run    a Plone site on zodb-pgjsonb with this catalog, on :8080
#   make test   venv, install, the whole test suite
#
# PYTHON=...            the Python 3.12 interpreter to build the venv with
# PGCATALOG_DSN=...     run on this PostgreSQL database instead of var/pgdata
# PGCATALOG_TEST_DSN=.. tests on this server instead of an embedded one
# PGCATALOG_CHROMIUM=.. the Chromium binary of the browser tests
# TEST_WORKERS=..       processes `make test` runs the suite in (default 2)

SHELL := /bin/bash
VENV := .venv
BIN := $(VENV)/bin

# python3.12 may be a pyenv shim that fails unless 3.12 is selected: take
# it only if it really runs, else pyenv's own 3.12 build.
PYTHON ?= $(shell \
	if python3.12 -c 'import sys' >/dev/null 2>&1; then echo python3.12; \
	elif command -v pyenv >/dev/null 2>&1 && \
	     ls -d "$$(pyenv root)"/versions/3.12.*/bin/python >/dev/null 2>&1; then \
	     ls -d "$$(pyenv root)"/versions/3.12.*/bin/python | sort -V | tail -n 1; \
	else echo python3.12; fi)

.PHONY: help install run chromium test lint constraints clean bench

help:
	@echo "make run | make test | make lint | make clean"

$(BIN)/python:
	@$(PYTHON) -c 'import sys; assert sys.version_info[:2] >= (3, 12), sys.version' \
	  || { echo "Python 3.12 is needed: set PYTHON=/path/to/python3.12"; exit 1; }
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip setuptools wheel

$(VENV)/.installed: $(BIN)/python setup.cfg constraints.txt
	$(BIN)/python -m pip install -q -c constraints.txt -e ".[test,run]"
	touch $@

install: $(VENV)/.installed

run: install
	$(BIN)/python -m plone_pgcatalog.demo.instance

# The browser tests (tests/browser) drive a headless Chromium through
# Playwright.  Playwright's own browser download needs the internet and its
# build may not run on the distribution, so they take the system's Chromium:
# PGCATALOG_CHROMIUM, else `chromium` on the PATH, else /usr/bin/chromium
# (the same order as tests/browser/conftest.py).  As root on Debian or
# Ubuntu it is installed here; anywhere else make stops and says what to
# install, rather than let the tests fail (they never skip).  apt-get update
# only when the install fails: the package lists are usually fresh enough.
# A CJK font comes with it, for screenshots of Japanese snippets (optional).
chromium:
	@if [ -n "$$PGCATALOG_CHROMIUM" ]; then \
	  [ -x "$$PGCATALOG_CHROMIUM" ] && exit 0; \
	  echo "PGCATALOG_CHROMIUM=$$PGCATALOG_CHROMIUM is not an executable file."; \
	  exit 1; \
	fi; \
	if command -v chromium >/dev/null 2>&1 || [ -x /usr/bin/chromium ]; then \
	  exit 0; \
	fi; \
	if [ "$$(id -u)" = 0 ] && [ -f /etc/debian_version ] && \
	   command -v apt-get >/dev/null 2>&1; then \
	  echo "Installing Chromium for the browser tests (apt-get install chromium)"; \
	  export DEBIAN_FRONTEND=noninteractive; \
	  apt-get install -y chromium || \
	    { apt-get update && apt-get install -y chromium; } || exit 1; \
	  apt-get install -y fonts-noto-cjk >/dev/null 2>&1 || \
	    echo "No CJK font (fonts-noto-cjk): screenshots of Japanese show" \
	         "boxes; the tests read the page's text and are not affected."; \
	else \
	  echo "The browser tests need Chromium, which is not installed."; \
	  echo "Install the package 'chromium' (Debian/Ubuntu: sudo apt-get install" \
	       "chromium), or set PGCATALOG_CHROMIUM=/path/to/chromium."; \
	  exit 1; \
	fi

# The suite runs in TEST_WORKERS processes (pytest-xdist; 0: in this one),
# each with databases (and, without PGCATALOG_TEST_DSN, an embedded server) of
# its own; a file's tests run in one process, the browser tests all in one
# (tests/conftest.py).
TEST_WORKERS ?= 2

test: install chromium
	$(BIN)/python -m pytest -n $(TEST_WORKERS) tests

# Benchmark against RelStorage + ZCatalog (benchmarks/README.rst); never part
# of `make test`.  DOCS=10000 for the large run; BENCH_ARGS=--dsn=... etc.
DOCS ?= 500
bench: $(BIN)/python
	$(BIN)/python -m pip install -q -c constraints.txt -e ".[test,run,bench]"
	$(BIN)/python benchmarks/run.py --docs $(DOCS) $(BENCH_ARGS)

# The checkers are pinned: a new release must not fail CI on unchanged code.
LINTERS := black==26.10.1 isort==9.0.2 flake8==7.5.0 codespell==2.4.3 \
	zpretty==4.0.3

lint: install
	$(BIN)/python -m pip install -q $(LINTERS)
	$(BIN)/black --check src tests
	$(BIN)/isort --check-only src tests
	$(BIN)/flake8 src tests
	$(BIN)/codespell src tests README.rst CHANGES.rst
	find src -name '*.zcml' -o -name '*.xml' | xargs $(BIN)/zpretty --check

constraints: install
	{ grep '^#' constraints.txt; $(BIN)/python -m pip freeze --exclude-editable; } \
	  > constraints.new && mv constraints.new constraints.txt

clean:
	rm -rf $(VENV) build dist *.egg-info src/*.egg-info
