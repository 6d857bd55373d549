# The two commands a fresh machine needs: `make demo` and `make test`.
PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: demo test install prepare clean

$(STAMP): requirements.txt requirements-dev.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements-dev.txt
	touch $(STAMP)

install: $(STAMP)

# Prepare the embedded corpus (train.py does it first), train
# configs/default.yaml (resuming if a checkpoint exists), then serve it on
# http://127.0.0.1:8080/.
demo: $(STAMP)
	$(PY) train.py --config configs/default.yaml --model_dir runs/default
	$(PY) serve.py --model_dir runs/default --host 127.0.0.1 --port 8080

test: $(STAMP)
	$(PY) -m pytest -q

prepare: $(STAMP)
	$(PY) -m data_pipeline.prepare --config configs/default.yaml

# What demo and the benchmarks write; other models under runs/ are left alone.
clean:
	rm -rf data/default runs/default bench/out
