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

# Serve $(DEMO_DIR) on http://127.0.0.1:8080/ at once while train.py trains $(DEMO_CONFIG)
# into it in the background (preparing the embedded corpus first, resuming from a checkpoint):
# the page shows training's progress and answers from each better checkpoint as it comes.
# Ctrl-C stops the server and the trainer.
DEMO_CONFIG ?= configs/default.yaml
DEMO_DIR ?= runs/default
demo: $(STAMP)
	@mkdir -p $(DEMO_DIR)
	@echo "training in the background; its log: $(DEMO_DIR)/train.log (tail -f $(DEMO_DIR)/train.log)"
	@$(PY) train.py --config $(DEMO_CONFIG) --model_dir $(DEMO_DIR) > $(DEMO_DIR)/train.log 2>&1 & \
	trainer=$$!; trap 'kill $$trainer 2>/dev/null' EXIT INT TERM; \
	$(PY) serve.py --model_dir $(DEMO_DIR) --host 127.0.0.1 --port 8080

# Two pytest-xdist workers, one per core here, each running whole test files (conftest.py).
test: $(STAMP)
	$(PY) -m pytest -q -n 2 --dist loadfile

prepare: $(STAMP)
	$(PY) -m data_pipeline.prepare --config configs/default.yaml

# What demo and the benchmarks write; other models under runs/ are left alone.
clean:
	rm -rf data/default runs/default bench/out
