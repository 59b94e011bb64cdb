# The book's commands; `make help` lists them.
# PYTHON=python3 runs the test targets in an existing environment (e.g. a GPU machine with its own
# torch, see ../shared/device/README.md) instead of the project's .venv.
PYTHON ?= .venv/bin/python
VENV := .venv
SANITIZE := tests/nbval_sanitize.cfg
NBVAL := --nbval --nbval-sanitize-with $(SANITIZE) --nbval-cell-timeout 900
CHAPTERS := $(wildcard chapters/*.md)
NOTEBOOKS := $(CHAPTERS:chapters/%.md=notebooks/%.ipynb)
# The helper package is not installed anywhere: a notebook's first cell finds it beside notebooks/
# (as on a hub), or installs it when the notebook runs alone; scripts here put the checkout on sys.path.
# No PYTHONPATH is exported, so every test sees what a hub sees.

# Jupyter refuses to run as root without being told (containers, CI machines).
LAB_ARGS ?= $(if $(filter 0,$(shell id -u)),--allow-root)

# The browser test drives Debian's Chromium; `make test` installs the package when it is missing.
CHROMIUM ?= /usr/bin/chromium
SUDO := $(if $(filter 0,$(shell id -u)),,sudo)

ifeq ($(PYTHON),.venv/bin/python)
READY := $(VENV)/.installed
else
READY := kernels
endif

.PHONY: help install kernels lab test test-cuda notebooks pin publish-check student img check lint bench clean

help:
	@echo "make lab        open the book in JupyterLab (installs first if needed)"
	@echo "make test       unit tests, make check, browser test, nbval --strict on the CPU kernel (what CI runs)"
	@echo "make test-cuda  nbval strict on the CUDA kernel (needs a GPU)"
	@echo "make notebooks  regenerate notebooks/ from chapters/ and execute them on the CPU kernel (make pin first)"
	@echo "make pin       write the book's address and the helpers' wheel sha256 into every chapter's first cell"
	@echo "make publish-check  fail with one line until the book can be published (address set, all pinned)"
	@echo "make student    the student edition in _build/student/: the notebooks without their answer cells"
	@echo "make site       the website in _build/html/ from the committed notebooks (offline, no re-execution)"
	@echo "make pdf        _build/book.pdf, the whole book in one PDF (Chromium prints the site)"
	@echo "make slides     _build/slides/<section>.html: each section's main line as a reveal.js deck (offline)"
	@echo "make img        redraw the figure files in img/ (img/draw.py)"
	@echo "make check      fail when a chapter and its notebook differ"
	@echo "make lint       ruff over the package, tests, benchmarks, notebooks and the website code"
	@echo "make bench      the book's performance figures, as ratios measured in one run"
	@echo "make clean      remove caches and the .venv"

install: $(READY)

# One stamp for the whole environment: redone only when a requirements file or the package changes.
$(VENV)/.installed: requirements.txt requirements-nodeps.txt pyproject.toml
	test -x $(VENV)/bin/python || python3 -m venv $(VENV)
	$(VENV)/bin/python -m pip install -q --disable-pip-version-check -r requirements.txt
	$(VENV)/bin/python -m pip install -q --disable-pip-version-check --no-deps -r requirements-nodeps.txt
	$(VENV)/bin/python -m pip uninstall -q -y attnbook 2>/dev/null || true  # an older venv had it installed
	$(MAKE) --no-print-directory kernels PYTHON=$(VENV)/bin/python
	touch $@

# The notebooks name the standard python3 kernel (BOOK_DEVICE unset: the GPU when torch sees one).
# Two convenience kernelspecs fix the device, for nbval on each: the CUDA one also fixes cuBLAS's
# workspace, which deterministic CUDA matmuls need (attnbook.setup() sets it too).
kernels:
	$(PYTHON) -m ipykernel install --sys-prefix --name book-cpu --display-name "Python (book, CPU)" --env BOOK_DEVICE cpu >/dev/null
	$(PYTHON) -m ipykernel install --sys-prefix --name book-cuda --display-name "Python (book, CUDA)" --env BOOK_DEVICE cuda --env CUBLAS_WORKSPACE_CONFIG :4096:8 >/dev/null

lab: $(READY)
	$(PYTHON) -m jupyterlab --ServerApp.root_dir=. --LabApp.default_url=/lab/tree/notebooks $(LAB_ARGS)

test: $(READY) $(CHROMIUM) site slides
	CHROMIUM=$(CHROMIUM) $(PYTHON) -m pytest tests notebooks $(NBVAL) --nbval-kernel-name book-cpu

$(CHROMIUM):
	@echo "installing Debian's chromium for the browser test (tests/test_browser.py)"
	$(SUDO) apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq chromium >/dev/null

# The same sanitizer as on the CPU: it masks what differs between machines, a GPU among them.
test-cuda: $(READY)
	@$(PYTHON) -c "import sys, torch; torch.cuda.is_available() or sys.exit('make test-cuda: torch sees no GPU here (torch.cuda.is_available() is False); run it on a machine with a CUDA GPU.')"
	$(PYTHON) -m pytest notebooks $(NBVAL) --nbval-kernel-name book-cuda

# pin first: a changed attnbook/ or address rewrites the chapters' first cell, then their notebooks.
notebooks: pin $(NOTEBOOKS)

# The book's address (pyproject.toml [project.urls]) and the wheel of attnbook/ every notebook pins
# (site/publish.py; README, "Publishing the book").
pin: $(READY)
	$(PYTHON) site/publish.py pin

publish-check: $(READY)
	@$(PYTHON) site/publish.py check

# jupytext writes the notebook from its chapter and executes it on the kernel named in the chapter
# (python3), on the CPU whatever the machine has. The kernel is told its chapter as JupyterLab tells
# it its notebook (JPY_SESSION_NAME): each figure's words for screen readers are the chapter's alt text.
notebooks/%.ipynb: chapters/%.md attnbook/*.py attnbook/checks/*.py | $(READY)
	BOOK_DEVICE=cpu JPY_SESSION_NAME=$(abspath $<) $(PYTHON) -m jupytext --to ipynb --execute -o $@ $<

# The student edition: nbconvert drops the cells tagged `answer` (code and outputs) and `book-only`
# (the line that says worked answers follow); the exercises' stubs and their checks stay. From the
# committed notebooks, nothing re-executed; the folder is emptied first, so no old section stays.
STUDENT_DROPS = answer book-only
student:
	rm -rf _build/student
	$(PYTHON) -m nbconvert --log-level WARN --to notebook --TagRemovePreprocessor.enabled=True \
	  $(foreach tag,$(STUDENT_DROPS),--TagRemovePreprocessor.remove_cell_tags $(tag)) \
	  --output-dir _build/student notebooks/*.ipynb

# The website and the PDF, from the committed notebooks (never re-executed): site/build.py.
# MathJax comes from npm (site/package-lock.json) and is served by the site itself.
SITE := _build/html
.PHONY: site pdf slides
site: $(READY) student site/node_modules/.package-lock.json
	$(PYTHON) site/build.py html
	@echo "website: $(SITE)/index.html"

pdf: $(READY) student site/node_modules/.package-lock.json $(CHROMIUM)
	CHROMIUM=$(CHROMIUM) $(PYTHON) site/build.py pdf

# One deck per section, from the committed notebooks' main line; reveal.js and MathJax from npm,
# copied beside the decks; the explorer's pictures shared with the website (site/slides.py).
slides: $(READY) site/node_modules/.package-lock.json
	$(PYTHON) site/slides.py

site/node_modules/.package-lock.json: site/package.json site/package-lock.json
	npm ci --prefix site --no-audit --no-fund --loglevel=error

img: $(READY)
	$(PYTHON) img/draw.py

check: $(READY)
	$(PYTHON) -m pytest tests/test_sync.py -q

lint: $(READY)
	$(PYTHON) -m ruff check attnbook tests bench notebooks img site

bench: $(READY)
	PYTHONPATH=$(CURDIR) $(PYTHON) bench/run.py

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache build _build test-artifacts *.egg-info
	find . -name __pycache__ -type d -prune -exec rm -rf {} +
