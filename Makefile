# The two commands of the README: `make demo` and `make test`.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
RUN    := $(VENV)/.installed-run
DEV    := $(VENV)/.installed-dev

.PHONY: demo test browser lint bench bench-scale sample clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# `make demo` installs what the tool needs to run: on the demo's few hundred people the
# counting kernels run as Python, so nothing is compiled. `make test` adds the test and
# lint tools and compiles every kernel into numba's cache once (prudence_cli/warm.py,
# two processes), since the tests run each kernel both ways.
$(RUN): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e .
	touch $(RUN)

$(DEV): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[test,lint]'
	$(BIN)/python -m prudence_cli.warm
	touch $(RUN) $(DEV)

demo: $(RUN)
	$(BIN)/prudence assess configs/demo.yaml
	$(BIN)/prudence catalog show --catalog catalog/demo --format table
	$(BIN)/prudence sanitize --threshold 0.3
	$(BIN)/prudence report --out demo-report.html

# The suite in one process per core (pytest-xdist; at most 4: each Dask test starts a
# cluster of its own). `pytest -n 0` runs it in one process.
test: $(DEV) browser
	$(BIN)/python -m pytest -n auto --maxprocesses 4

# The report's browser test needs Debian's chromium; installed where apt-get can, else the
# test is skipped with that reason.
browser:
	@command -v chromium >/dev/null 2>&1 || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 \
	  && { apt-get install -y -q chromium >/dev/null 2>&1 || { apt-get update -q >/dev/null 2>&1 && apt-get install -y -q chromium >/dev/null 2>&1; }; } \
	  && echo "installed chromium for the browser test"; } \
	  || echo "chromium is not installable here: the browser test will be skipped"

lint: $(DEV)
	$(BIN)/ruff check prudence_cli tests benchmarks
	$(BIN)/ruff format --check prudence_cli tests benchmarks
	$(BIN)/mypy prudence_cli

# Speed against scikit-mobility and fastmob (installed in benchmarks/.peers), and at scale.
# Not part of CI; results land in benchmarks/out/results.json (see benchmarks/RESULTS.md).
bench: $(DEV)
	bash benchmarks/peers_setup.sh
	$(BIN)/python benchmarks/run.py

# Ingestion of 50M rows and the Dask backend against the local engine (needs ~8 GB of
# disk for a while and ~15 minutes). Results in benchmarks/out/scale_out.{json,md}.
bench-scale: $(DEV)
	$(BIN)/python benchmarks/scale_out.py

# Regenerates the shipped sample data (seeded: the files do not change).
sample: $(RUN)
	$(BIN)/prudence sample gps --users 400 --days 21 --seed 7 --force --out sample_data/pisa_gps.csv.gz
	$(BIN)/prudence sample cdr --users 400 --days 21 --seed 7 --force --out sample_data/pisa_cdr.csv.gz --towers sample_data/pisa_towers.csv
	$(BIN)/prudence sample segments --users 200 --days 7 --seed 7 --force --out sample_data/pisa_trips.csv.gz --segments sample_data/pisa_streets.csv.gz

clean:
	rm -rf $(VENV) catalog .pytest_cache
