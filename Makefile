# The two commands: `make demo` and `make test`. Every target sets itself up.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-$(shell cat pyproject.toml | sha256sum | cut -c1-12)

.PHONY: demo test test-unit lint bench up down status jars chromium clean jepsen

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev]'
	rm -f $(VENV)/.installed-*
	touch $@

jars: $(STAMP)
	$(PY) -m streaming.spark.jars

demo: jars
	$(PY) -m metalog.cli up
	$(PY) -m metalog.demo

# The history page's test opens it in a real headless browser (Debian's chromium).
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
chromium:
	command -v chromium >/dev/null || { $(SUDO) apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq chromium; }

test: jars chromium
	$(PY) -m pytest

test-unit: $(STAMP)
	$(PY) -m pytest -m "not integration and not spark"

lint: $(STAMP)
	$(PY) -m ruff check .
	$(PY) -m mypy events producers projector streaming server metalog chaos

# The long chaos run (docs/reliability.md): random faults for MINUTES, a random seed printed.
# It needs the Go toolchain (Toxiproxy and the Porcupine checker are built from chaos/go).
MINUTES ?= 60
jepsen: jars
	$(PY) -m chaos --minutes $(MINUTES)

bench: jars
	$(PY) -m bench.baseline

up: jars
	$(PY) -m metalog.cli up

down: $(STAMP)
	$(PY) -m metalog.cli down

status: $(STAMP)
	$(PY) -m metalog.cli status

clean:
	-$(PY) -m metalog.cli down
	rm -rf .metalog
