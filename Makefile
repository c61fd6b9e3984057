# Two commands for a fresh machine with Python 3.11+:
#   make run    set up, migrate the example project (SQLite), create the demo schedules, run the engine
#   make test   set up, lint, check migrations, and run the suite on SQLite, PostgreSQL and MariaDB

PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
RUN_STAMP := $(VENV)/.installed-run
DATABASES ?= sqlite postgresql mysql
PYTEST_ARGS ?=

.PHONY: system run test lint migrations-check screenshots test-sqlite test-postgresql test-mysql test-django6 test-peers test-lowest demo docs clean

$(PY):
	$(PYTHON) -c 'import sys; sys.exit("Python 3.11+ is required") if sys.version_info < (3, 11) else None'
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

# make run: the package alone (pure Python, nothing to compile); the example project needs no more.
$(RUN_STAMP): pyproject.toml | $(PY)
	$(PY) -m pip install --quiet --editable .
	touch $(RUN_STAMP)

# make test: the system packages and database servers first (scripts/test-machine.sh), then the
# test extra, whose mysqlclient compiles against the MariaDB client headers.
system:
	bash scripts/test-machine.sh

$(STAMP): pyproject.toml | system $(PY)
	$(PY) -m pip install --quiet --editable ".[test]"
	$(PY) -c 'import django_cadence, croniter, MySQLdb, psycopg'
	touch $(STAMP)

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports

migrations-check: $(STAMP)
	$(PY) -m django makemigrations --check --dry-run --settings=tests.settings
	$(PY) manage.py makemigrations --check --dry-run

# Each database twice: the suite, then Cadence routed to a second alias of its own
# (tests/own_database: two SQLite files, or two databases of the server).
test-sqlite test-postgresql test-mysql: test-%: $(STAMP)
	CADENCE_TEST_DB=$* $(PY) -m pytest $(PYTEST_ARGS)
	CADENCE_TEST_DB=$* $(PY) -m pytest --ds=tests.own_database.settings tests/own_database

test: system lint migrations-check $(addprefix test-,$(DATABASES))

# The SQLite suite once more under the newest Django 6 (needs Python 3.12+: PYTHON312=...).
PYTHON312 ?= python3.12
test-django6:
	$(PYTHON312) -m venv .venv-django6
	.venv-django6/bin/python -m pip install --quiet --upgrade pip
	.venv-django6/bin/python -m pip install --quiet -e ".[test]" "Django>=6,<7"
	CADENCE_TEST_DB=sqlite .venv-django6/bin/python -m pytest $(PYTEST_ARGS)

# Beside the peers a project leaves: django-celery-beat and django-q2 installed with the versions
# they pin (cron-descriptor 1.x among them), the importer and the rule descriptions on each database.
PEERS_TESTS ?= tests/peers tests/schedule/test_describe.py tests/admin/test_admin_schedules.py
test-peers: system
	$(PYTHON) -m venv .venv-peers
	.venv-peers/bin/python -m pip install --quiet --upgrade pip
	.venv-peers/bin/python -m pip install --quiet -e ".[test-core,postgresql,mysql,peers]"
	for db in $(DATABASES); do \
		CADENCE_TEST_DB=$$db .venv-peers/bin/python -m pytest --ds=tests.peers.settings $(PEERS_TESTS) || exit 1; \
	done

# The lowest version of each dependency pyproject.toml declares, and of the tasks extra, on
# SQLite: the schedule math, its descriptions, declarations, the models and Django tasks, which
# are what those dependencies touch.
LOWEST := "Django==5.2.0" "croniter==6.0.0" "cron-descriptor==1.4.0" "dalf==0.7.0" "django-tasks==0.12.0"
LOWEST_TESTS ?= tests/schedule tests/admin/test_admin_schedules.py tests/ops tests/models tests/test_tasks.py
test-lowest: system
	$(PYTHON) -m venv .venv-lowest
	.venv-lowest/bin/python -m pip install --quiet --upgrade pip
	.venv-lowest/bin/python -m pip install --quiet -e ".[test-core]" $(LOWEST)
	CADENCE_TEST_DB=sqlite .venv-lowest/bin/python -m pytest $(LOWEST_TESTS)

# The documentation site (Sphinx, MyST Markdown, furo); warnings are errors.
DOCS_STAMP := $(VENV)/.installed-docs

$(DOCS_STAMP): pyproject.toml | $(PY)
	$(PY) -m pip install --quiet --editable ".[docs]"
	touch $(DOCS_STAMP)

docs: $(DOCS_STAMP)
	$(VENV)/bin/sphinx-build -W --keep-going -b html docs docs/_build/html

demo: $(RUN_STAMP)
	$(PY) manage.py migrate --noinput
	$(PY) manage.py cadence_demo

run: demo
	$(PY) manage.py run_cadence

clean:
	rm -rf $(VENV) .venv-django6 .venv-peers .venv-lowest *.egg-info .pytest_cache .ruff_cache .import_linter_cache example_project/db.sqlite3 docs/_build

# make screenshots: the admin tour's pictures (docs/screenshots/), taken by the browser tests.
screenshots: $(STAMP)
	CADENCE_SCREENSHOTS=1 CADENCE_TEST_DB=sqlite $(PY) -m pytest tests/admin/browser -q -p no:cacheprovider
