# okra developer entry points. Every target installs what it needs on first use:
# a virtualenv from the lock file, and the Go-built control plane (cached).

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# Three workers per two cores: much of an e2e test is waiting on servers (a watch, a
# rollout's pause), and a third worker fills that time (2 cores: 13.7 min with 3 workers,
# 17.7 with 2)
PYTEST_WORKERS ?= $(shell $(PYTHON) -c 'import os; print(max(2, (os.cpu_count() or 2) * 3 // 2))')

.PHONY: help venv assets node argocd helm chart docs image test-image test-node check-chart lint manifests check-manifests rbac check-rbac test test-stress test-compat test-unit test-reliability fuzz fmt lock clean bench-runtime bench-cell bench-judge demo demo-fleet

help:
	@echo "make demo    a real cluster canary on a local control plane + moto, live"
	@echo "make demo-fleet  okra's standard scenario: EKS clusters -> Argo CD -> target groups -> canary"
	@echo "make test    lint, type-check and run every test (installs everything on first use)"
	@echo "make test-compat  the compatibility subset on each Kubernetes minor (COMPAT_MINORS) and Argo CD"
	@echo "make test-stress  make test beside a CPU hog (stress-ng), more workers than cores, a shuffled order"
	@echo "make assets  build/cache kube-apiserver, kube-controller-manager, kubectl, etcd"
	@echo "make argocd  build/cache Argo CD (argocd + CRDs) and fetch Debian's redis-server"
	@echo "make lint    ruff, mypy --strict, import layering, kind names in one place, CRDs up to date"
	@echo "make test-reliability  only test/reliability (faults, kill points, failover, RBAC audit, secret scan), with figures"
	@echo "make fuzz    the Cell plan under 10,000 generated rollouts (OKRA_FUZZ_EXAMPLES=N; make test: 300), then"
	@echo "             okra-manager under 10,000 generated objects (OKRA_FUZZ_OBJECTS=N; make test: 2,000)"
	@echo "make manifests  regenerate config/crd/bases from the API models"
	@echo "make chart   copy the CRDs and RBAC roles of config/ into charts/okra"
	@echo "make image   build the okra-manager image (buildah, or docker)"
	@echo "make test-image  run okra-manager from the image against the local control plane"
	@echo "make test-node   okra installed as users install it, on a real node (root; containerd, kubelet)"
	@echo "make docs    build the docs site (mkdocs, strict) into site/"
	@echo "make lock    re-resolve requirements-dev.lock from pyproject.toml"
	@echo "make bench-runtime  okra_runtime vs kopf vs controller-runtime, 10k objects"
	@echo "make bench-cell     new target group -> first ModifyRule; idle Cell's AWS calls"
	@echo "make bench-judge    canary judge: false positives, detection, CPU for 50 metrics"

$(STAMP): pyproject.toml testkit/pyproject.toml requirements-dev.lock
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "okra needs Python 3.11+")'
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -r requirements-dev.lock
	$(BIN)/pip install --quiet --no-deps -e . -e ./testkit
	touch $@

venv: $(STAMP)

assets:
	@hack/build-control-plane.sh

node:
	@hack/build-node.sh

argocd:
	@hack/build-argocd.sh
	@hack/redis.sh

helm:
	@hack/build-helm.sh

chart:
	hack/sync-chart.sh

check-chart:
	hack/sync-chart.sh --check

CRD_MODELS := okra_controllers.api.v1alpha1:CRD_MODELS

manifests: $(STAMP)
	$(BIN)/python -m okra_runtime.crdgen --out config/crd/bases $(CRD_MODELS)
	$(BIN)/python -m okra_runtime.crddoc --out docs/reference/crds.md config/crd/bases
	hack/sync-chart.sh

check-manifests: $(STAMP)
	$(BIN)/python -m okra_runtime.crdgen --check --out config/crd/bases $(CRD_MODELS)
	$(BIN)/python -m okra_runtime.crddoc --check --out docs/reference/crds.md config/crd/bases

rbac: $(STAMP)
	$(BIN)/python -m okra_controllers.rbac --out config/rbac
	hack/sync-chart.sh

check-rbac: $(STAMP)
	$(BIN)/python -m okra_controllers.rbac --check --out config/rbac

lint: $(STAMP) check-manifests check-rbac check-chart
	$(BIN)/ruff check src testkit test examples bench
	$(BIN)/ruff format --check src testkit test examples bench
	$(BIN)/mypy
	$(BIN)/lint-imports
	$(BIN)/python hack/check-kinds.py src/okra_controllers
	@if git grep -nE '^(<<<<<<<|>>>>>>>) ' -- . ; then echo "merge conflict markers left in the files above"; exit 1; fi

OKRA_FUZZ_EXAMPLES ?= 10000
# make test runs test/fuzz too, with fewer examples: 300 a test (600 rollouts) take 12 s of
# one core
TEST_FUZZ_EXAMPLES ?= 300
OKRA_FUZZ_OBJECTS ?= 10000
fuzz: $(STAMP)
	OKRA_FUZZ_EXAMPLES=$(OKRA_FUZZ_EXAMPLES) $(BIN)/pytest test/fuzz -m fuzz -p no:randomly -n 0 -s -q
	OKRA_ASSETS="$$(hack/build-control-plane.sh)" && export OKRA_ASSETS && \
	OKRA_FUZZ_OBJECTS=$(OKRA_FUZZ_OBJECTS) $(BIN)/pytest test/reliability/test_fuzzed_input.py \
		-p no:randomly -n 0 -s -q

fmt: $(STAMP)
	$(BIN)/ruff format src testkit test examples bench
	$(BIN)/ruff check --fix src testkit test examples bench

# The servers the suites beyond the control plane run (each built or fetched on first use).
SERVERS = OKRA_PROMETHEUS="$$(hack/prometheus.sh)" && export OKRA_PROMETHEUS && \
	OKRA_HELM="$$(hack/build-helm.sh)" && export OKRA_HELM && \
	OKRA_ARGOCD="$$(hack/build-argocd.sh)" && export OKRA_ARGOCD && \
	OKRA_REDIS="$$(hack/redis.sh)" && export OKRA_REDIS && \
	OKRA_EXPRLANG="$$(hack/build-exprlang.sh)" && export OKRA_EXPRLANG

test: lint
	OKRA_ASSETS="$$(hack/build-control-plane.sh)" && export OKRA_ASSETS && $(SERVERS) && \
	OKRA_FUZZ_EXAMPLES=$(TEST_FUZZ_EXAMPLES) \
	$(BIN)/pytest -n $(PYTEST_WORKERS) --dist loadscope --durations=30 -m "not image and not node"

# The compatibility matrix (docs/compatibility.md): test/compat.py's subset on each Kubernetes
# minor of COMPAT_MINORS (the oldest EKS supports through the newest the Go module proxy
# serves, each pinned in hack/k8s/) with the pinned Argo CD, and okra's reads and writes of
# Argo CD's objects against the CRDs of each release in COMPAT_ARGOCD_CRDS. CI runs the
# matrix's oldest end (COMPAT_MINORS=1.32 COMPAT_ARGOCD_CRDS=v3.4.13, .ci/run says why).
COMPAT_MINORS ?= 1.32 1.33 1.34 1.35 1.36 1.37
COMPAT_ARGOCD_CRDS ?= v3.4.13 v3.5.7
test-compat: $(STAMP)
	$(SERVERS) && COMPAT_ARGOCD_CRDS="$(COMPAT_ARGOCD_CRDS)" PYTEST_WORKERS=$(PYTEST_WORKERS) \
	hack/compat.sh $(COMPAT_MINORS)

# The whole suite on a busy machine, where races show: Debian's stress-ng keeps every core at
# STRESS_CPU_LOAD percent, pytest runs two workers per core, and the modules and tests run in
# an order shuffled by a seed it prints (OKRA_TEST_SHUFFLE=<seed> runs that order again).
# Run it before stopping; a race it finds is the product's to fix.
STRESS_CPU_LOAD ?= 50
STRESS_WORKERS ?= $(shell $(PYTHON) -c 'import os; print((os.cpu_count() or 2) * 2)')
STRESS_SHUFFLE ?= $(shell $(PYTHON) -c 'import random; print(random.randrange(10**6))')
STRESS_SHUFFLE := $(STRESS_SHUFFLE)
test-stress: $(STAMP)
	@echo "test-stress: OKRA_TEST_SHUFFLE=$(STRESS_SHUFFLE), $(STRESS_WORKERS) workers, CPU hog at $(STRESS_CPU_LOAD)%"
	OKRA_TEST_SHUFFLE=$(STRESS_SHUFFLE) STRESS_CPU_LOAD=$(STRESS_CPU_LOAD) \
		hack/stress.sh $(MAKE) test PYTEST_WORKERS=$(STRESS_WORKERS)

image:
	@hack/image.sh

# The image suite: okra-manager from the built image's filesystem rolls out a Cell (root,
# buildah and umoci needed; CI runs it after `make test`).
test-image: $(STAMP)
	OKRA_IMAGE="$$(hack/image.sh)" && export OKRA_IMAGE && \
	OKRA_ASSETS="$$(hack/build-control-plane.sh)" && export OKRA_ASSETS && \
	$(BIN)/pytest -n 0 -m image test/e2e/test_image.py

# The node suite: a real node (containerd, runc, the bridge CNI, kubelet, kube-proxy) joined to
# the control plane; okra-manager installed with kustomize and with Helm runs as a Pod. Root
# only (hack/build-node.sh installs Debian's containerd, runc, CNI plugins); one node per host,
# and the host's sysctls and iptables are put back after (CI runs it after test-image).
test-node: $(STAMP)
	OKRA_NODE_ASSETS="$$(hack/build-node.sh)" && export OKRA_NODE_ASSETS && \
	OKRA_ASSETS="$$(hack/build-control-plane.sh)" && export OKRA_ASSETS && \
	OKRA_HELM="$$(hack/build-helm.sh)" && export OKRA_HELM && \
	OKRA_IMAGE="$$(hack/image.sh)" && export OKRA_IMAGE && \
	OKRA_LBC="$$(hack/build-lbc.sh)" && export OKRA_LBC && \
	OKRA_ARGOCD="$$(hack/build-argocd.sh)" && export OKRA_ARGOCD && \
	OKRA_REDIS="$$(hack/redis.sh)" && export OKRA_REDIS && \
	$(BIN)/pytest -n 0 -m node test/node

test-unit: $(STAMP)
	$(BIN)/pytest -m unit

# Also part of `make test`; this runs them alone and shows what each measured.
test-reliability: $(STAMP)
	OKRA_ASSETS="$$(hack/build-control-plane.sh)" && export OKRA_ASSETS && \
	$(BIN)/pytest test/reliability -rP -n 2 --dist loadscope

demo: $(STAMP)
	OKRA_ASSETS="$$(hack/build-control-plane.sh)" $(BIN)/python -m okra_testkit.demo

demo-fleet: $(STAMP)
	OKRA_ASSETS="$$(hack/build-control-plane.sh)" && export OKRA_ASSETS && \
	OKRA_ARGOCD="$$(hack/build-argocd.sh)" && export OKRA_ARGOCD && \
	OKRA_REDIS="$$(hack/redis.sh)" && export OKRA_REDIS && \
	$(BIN)/python -m okra_testkit.demo_fleet

docs: $(STAMP)
	$(BIN)/mkdocs build --strict --site-dir site

bench-runtime: $(STAMP)
	bench/runtime/run.sh

bench-cell: $(STAMP)
	bench/cell/run.sh

bench-judge: $(STAMP)
	.venv/bin/python bench/judge/run.py

# requirements-dev.lock: okra's dev extra and okra-testkit's dependencies; requirements.lock:
# okra's runtime dependencies alone (the image's), at the same pins. okra-testkit requires the
# okra of this tree, which is on no index: pip-compile finds it as a wheel built here and leaves
# it out of the lock (`make venv` installs both from the checkout). No machine path is written.
lock:
	rm -rf .venv-lock && $(PYTHON) -m venv .venv-lock && .venv-lock/bin/pip install --quiet pip-tools
	.venv-lock/bin/pip wheel --quiet --no-deps -w .venv-lock/okra .
	CUSTOM_COMPILE_COMMAND="make lock" .venv-lock/bin/pip-compile --quiet --extra dev --strip-extras --generate-hashes \
	  --find-links .venv-lock/okra --no-emit-find-links --unsafe-package okra \
	  -o requirements-dev.lock pyproject.toml testkit/pyproject.toml
	sed -i '/^# WARNING: The following packages were not pinned/,$$d' requirements-dev.lock
	echo '# okra (required by okra-testkit): not pinned here, `make venv` installs it from this tree' >> requirements-dev.lock
	CUSTOM_COMPILE_COMMAND="make lock" .venv-lock/bin/pip-compile --quiet --strip-extras --no-emit-find-links --generate-hashes \
	  --constraint requirements-dev.lock -o requirements.lock pyproject.toml
	rm -rf .venv-lock

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache
