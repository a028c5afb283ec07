# plone_pgcatalog: the two commands of the README, and a few more.
#
#   make run    a Plone site on zodb-pgjsonb with this catalog, on :8080
#   make test   venv, install, the whole test suite
#
# PYTHON=...            the Python 3.12 interpreter to build the venv with
# PGCATALOG_DSN=...     run on this PostgreSQL database instead of var/pgdata
# PGCATALOG_TEST_DSN=.. tests on this server instead of an embedded one

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

.PHONY: help install run test lint constraints clean bench

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

test: install
	$(BIN)/python -m pytest tests

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
