# `make bench` runs every benchmark under bench/ and prints their tables (about 25 minutes on a
# 2-core CPU, most of it vLLM starts and the soak); docs/benchmarks.md records the results.
PYTHON ?= $(if $(wildcard .venv/bin/python),.venv/bin/python,python3)
SOAK_SECONDS ?= 300
export PYTHONPATH := $(CURDIR)
export QT_QPA_PLATFORM ?= offscreen

.PHONY: bench bench-quick test

bench:
	$(PYTHON) bench/machine.py
	$(PYTHON) bench/store_bench.py
	$(PYTHON) bench/gui_stall.py
	$(PYTHON) bench/app_cpu.py
	$(PYTHON) bench/fidelity.py
	$(PYTHON) bench/client_cost.py
	$(PYTHON) bench/restart.py
	$(PYTHON) bench/soak.py --seconds $(SOAK_SECONDS)

# The benchmarks that start no vLLM server (a minute or two).
bench-quick:
	$(PYTHON) bench/machine.py
	$(PYTHON) bench/store_bench.py
	$(PYTHON) bench/gui_stall.py
	$(PYTHON) bench/app_cpu.py

test:
	$(PYTHON) -m pytest
