# memoryhub: `make run` serves the embedded defaults; `make test` runs the whole suite.
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
HOST ?= 127.0.0.1
PORT ?= 8000
MCP_PORT ?= 8001

.PHONY: install run test worker beat lint chromium clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

$(VENV)/.installed: requirements.txt | $(BIN)/python
	$(BIN)/pip install --quiet -r requirements.txt
	touch $@

install: $(VENV)/.installed

# The embedded default: SQLite, and a Celery worker (with beat) on the filesystem broker
# (a queue in var/broker, no server) so that indexing never runs inside a web request.
# The MCP server (docs/mcp.md) answers at $(MCP_PORT)/mcp. Ctrl-C stops all three.
EMBEDDED := CELERY_BROKER_URL=filesystem://
run: install
	$(BIN)/python manage.py migrate --noinput
	$(BIN)/python manage.py demo
	trap 'kill 0' EXIT; \
	$(EMBEDDED) $(BIN)/celery -A memoryhub worker --beat --pool=solo --loglevel=warning \
	  --schedule var/celerybeat-schedule & \
	$(EMBEDDED) $(BIN)/uvicorn mcp_server.asgi:application --host $(HOST) --port $(MCP_PORT) \
	  --log-level warning & \
	$(EMBEDDED) $(BIN)/python manage.py runserver $(HOST):$(PORT)

# Debian's chromium for the browser tests; installed only when missing and we may.
chromium:
	@command -v chromium >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium) >/dev/null; \
	  else echo "chromium not installed and cannot install it: browser tests will be skipped"; fi; }

test: install chromium
	$(BIN)/python -m pytest $(PYTEST_ARGS)

worker: install
	$(BIN)/celery -A memoryhub worker --beat --loglevel=info

beat: install
	$(BIN)/celery -A memoryhub beat --loglevel=info

lint: install
	$(BIN)/ruff check .
	PYTHONPATH=. $(BIN)/lint-imports
	$(BIN)/mypy
	$(BIN)/python manage.py makemigrations --check --dry-run
	$(BIN)/python manage.py spectacular --validate --fail-on-warn --file /dev/null
	MEMORYHUB_ENV=production SECRET_KEY=$$(openssl rand -hex 40) ALLOWED_HOSTS=memoryhub.example.com \
	  $(BIN)/python manage.py check --deploy --fail-level WARNING

clean:
	rm -rf $(VENV) staticfiles .pytest_cache .ruff_cache .mypy_cache .import_linter_cache .hypothesis
