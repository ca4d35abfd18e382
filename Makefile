# webnovel — the two commands: `make run` (install, migrate, load the demo book, serve) and `make test`.
# `make run` serves ASGI (uvicorn): the pages and the REST API through Django, the MCP server at /mcp/<book>.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
HOST ?= 127.0.0.1
PORT ?= 8000

.PHONY: run test install lint bench clean

$(BIN)/.installed: requirements.txt
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -r requirements.txt
	touch $@

install: $(BIN)/.installed

run: install
	$(BIN)/python manage.py migrate --noinput
	$(BIN)/python manage.py collectstatic --noinput --verbosity 0
	$(BIN)/python manage.py demo_setup --host $(HOST) --port $(PORT)
	$(BIN)/python -m uvicorn webnovel.asgi:application --host $(HOST) --port $(PORT)

test: install
	$(BIN)/python -m pytest $(PYTEST_ARGS)

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports
	$(BIN)/python manage.py makemigrations --check --dry-run

bench: install
	$(BIN)/python bench/run_all.py

clean:
	rm -rf $(VENV) var staticfiles
