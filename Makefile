# `make test` and `make demo` work on a fresh clone: they create .venv, install the CPU build of
# torch first (an unpinned torch would pull a multi-GB CUDA build), then aiayn with its dev extras
# and the explorer's (`aiayn explore` and its browser tests).
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
TORCH := torch==2.13.0
# Where pip looks for torch. Empty: pip's own index (which finds the CPU build here). On a machine
# where it would pick a CUDA build, `make TORCH_INDEX=https://download.pytorch.org/whl/cpu test`;
# for a GPU, the CUDA index of your driver (docs/faq.md).
TORCH_INDEX ?=

.PHONY: test test-fast demo course install lint format clean

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

$(STAMP): $(BIN)/python pyproject.toml
	$(BIN)/pip install --quiet $(if $(TORCH_INDEX),--index-url $(TORCH_INDEX)) $(TORCH)
	$(BIN)/pip install --quiet -e '.[dev,explore,serve,hf,plot,numbers,html]'
	touch $(STAMP)

install: $(STAMP)

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

test: $(STAMP) lint
	bash scripts/ensure-system-deps.sh
	$(BIN)/python -m pytest

# The edit-test loop: everything but the tests marked @pytest.mark.slow (make test runs those).
test-fast: $(STAMP) lint
	$(BIN)/python -m pytest -m "not slow"

demo: $(STAMP)
	$(BIN)/aiayn demo

# The notebook course (notebooks/, docs/course.md): JupyterLab from the venv, with aiayn[course].
$(VENV)/.course: $(STAMP)
	$(BIN)/pip install --quiet -e '.[course]'
	touch $(VENV)/.course

# Your work goes into notebooks/yours/ (ignored by git), copied once from notebooks/en and zh.
course: $(VENV)/.course
	mkdir -p notebooks/yours
	cp -rn notebooks/en notebooks/zh notebooks/yours/
	$(BIN)/jupyter lab $(if $(filter 0,$(shell id -u)),--allow-root) notebooks/yours/

format: $(STAMP)
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

clean:
	rm -rf $(VENV) build *.egg-info
