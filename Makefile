# Two commands do all set-up on a fresh machine:
#   make demo   - run the offline demo of the real pipeline
#   make test   - run the test suite
# Both install into the project's own virtual environment at .venv.
VENV ?= .venv
PY := $(VENV)/bin/python
# CPU machines: the local CPU build of torch; PyPI's torchvision is a CUDA build that breaks
# `import lmms_eval.tasks` next to CPU torch, so it is removed (see README, "Install").
TORCH_SPEC ?= torch==2.13.0

.PHONY: setup test demo clean-venv

$(VENV)/.installed: pyproject.toml Makefile
	python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q "$(TORCH_SPEC)"
	$(PY) -m pip install -q -e '.[test]'
	$(PY) -m pip uninstall -y -q torchvision || true
	@# WordNet 3.0 for METEOR, from the distribution's package mirror when we may install (optional:
	@# without it METEOR is reported unavailable and its value tests skip)
	@if [ ! -d /usr/share/wordnet ] && command -v apt-get >/dev/null && [ "$$(id -u)" = 0 ]; then \
		apt-get install -y -q wordnet-base >/dev/null 2>&1 || (apt-get update -q >/dev/null 2>&1 && apt-get install -y -q wordnet-base >/dev/null 2>&1) || echo "wordnet-base not installed: METEOR will be unavailable"; fi
	touch $@

setup: $(VENV)/.installed

test: setup
	$(PY) -m pytest -q -ra tests

demo: setup
	$(VENV)/bin/lmms-eval-earthsci demo

clean-venv:
	rm -rf $(VENV)
