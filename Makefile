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

# Prepare the embedded corpus, train configs/default.yaml (resuming if a
# checkpoint exists), then serve it on http://127.0.0.1:8080/.
demo: $(STAMP)
	$(PY) -m data_pipeline.prepare --config configs/default.yaml
	$(PY) train.py --config configs/default.yaml --model_dir runs/default
	$(PY) serve.py --model_dir runs/default --host 127.0.0.1 --port 8080

test: $(STAMP)
	$(PY) -m pytest -q

prepare: $(STAMP)
	$(PY) -m data_pipeline.prepare --config configs/default.yaml

clean:
	rm -rf data runs bench/out
