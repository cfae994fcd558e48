# The README's commands: `make run` trains MADQN briefly, `make test` runs the tests.
# Both create .venv (CPython 3.10) from requirements.txt + constraints.txt when it is missing
# (and, as root, install the Debian libraries MuJoCo's headless rendering needs if they are not).
SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
PYTEST_ARGS ?=
# Test processes (pytest-xdist): one per core of these 2-core machines; 0 runs them in this one.
PYTEST_WORKERS ?= 2
RUN_ARGS ?=

.PHONY: run test docs venv clean-venv

venv: $(STAMP)

$(STAMP): requirements.txt constraints.txt setup.py scripts/install_render_libraries.sh
	@python=$$(scripts/find_python310.sh) || exit 1; \
	if [ ! -x $(PY) ]; then echo "creating $(VENV) with $$python"; "$$python" -m venv $(VENV); fi
	$(PY) -m pip install --quiet --upgrade "pip<26"
	$(PY) -m pip install --quiet -r requirements.txt -c constraints.txt
	$(PY) -m pip install --quiet --no-deps --no-build-isolation -e .
	@scripts/install_render_libraries.sh
	@touch $(STAMP)

# About three minutes on 2 cores: enough steps for the greedy return to pass a random policy's
# clearly; evaluated (the default) every 5,000 executor steps, 32 greedy episodes a round.
RUN_FLAGS := --lp_launch_type=local_mt --max_executor_steps=40000

run: $(STAMP)
	$(PY) examples/mpe/run_madqn.py $(RUN_FLAGS) $(RUN_ARGS)

test: $(STAMP)
	$(PY) -m pytest tests -n $(PYTEST_WORKERS) --dist loadgroup --no-loadscope-reorder $(PYTEST_ARGS)

# The documentation site (into site/); warnings are errors. tests/test_docs.py builds it too.
docs: $(STAMP)
	$(VENV)/bin/mkdocs build --strict

clean-venv:
	rm -rf $(VENV)
