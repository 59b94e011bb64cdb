#!/usr/bin/env bash
# The book's CUDA checks in one run on a lent GPU machine, which has torch but no network. From the
# project root, with the wheels of ../shared/device/wheels.sh in .whl/ (README, "How CI and the two
# kernels work"):
#     bash bench/cuda.sh            (OUT=folder for the evidence; default _build/cuda)
# Each step is bounded by `timeout` inside BUDGET seconds, so that a hang in one leaves the others'
# evidence. Nothing optional stops it before the tests; the last line says what it could not do.
#   1. .whl/*.whl installed into $SITE with no network (pip --no-index --no-deps); PYTHONPATH set
#   2. versions (GPU, driver, torch, CUDA, the book's packages) and every notebook's imports -> env.txt
#   3. the two kernels registered (make kernels)
#   4. make test-cuda: nbval strict, every notebook on the book-cuda kernel -> test-cuda.xml
#   5. the CUDA half of make bench (no one-core runs) -> bench.txt, executed.tar.gz (SKIP_BENCH=1: not)
#   6. summary.txt and the draft cuda-DATE.md for bench/results/
# Everything printed also goes to $OUT/log.txt. Exit status: make test-cuda's (0 = every cell passed).
set -u
cd "$(dirname "$0")/.." || exit
OUT=${OUT:-_build/cuda}
PYTHON=${PYTHON:-python3}
SITE=${SITE:-/tmp/book-site}
BUDGET=${BUDGET:-470}   # seconds for all of it: the device run's limit is about 480
export PYTHONUNBUFFERED=1
mkdir -p "$OUT" && OUT=$(cd "$OUT" && pwd) || exit
started=$SECONDS
missed=()   # what could not be done, a phrase each

# step NAME CAP LOG COMMAND...: COMMAND for at most CAP seconds (less when the budget runs short),
# its output also written to LOG unless LOG is -.
step() {
  local name=$1 cap=$2 log=$3 limit rc t0=$SECONDS
  shift 3
  limit=$((BUDGET - (SECONDS - started) - 20))
  ((limit > cap)) && limit=$cap
  if ((limit < 5)); then
    echo "== $name: not started, the budget of $BUDGET s is spent"
    missed+=("$name (no time left)")
    return 124
  fi
  echo "== $name (at most $limit s)"
  if [[ $log == - ]]; then
    timeout -k 10 "$limit" "$@" 2>&1
    rc=$?
  else
    timeout -k 10 "$limit" "$@" 2>&1 | tee "$log"
    rc=${PIPESTATUS[0]}
  fi
  echo "== $name: exit $rc after $((SECONDS - t0)) s$( ((rc == 124 || rc == 137)) && echo ', stopped at its limit')"
  return "$rc"
}

# recipe TARGET: the Makefile's recipe for TARGET with $(PYTHON), $(NBVAL) and $(SANITIZE) filled in,
# for a machine without make (NO_MAKE=1 tries it where make exists).
recipe() {
  awk -v target="$1:" '$1 == target {on = 1; next} on && /^\t/ {sub(/^\t@?/, ""); print; next} {on = 0}' Makefile |
    sed -e "s|\$(PYTHON)|$PYTHON|g" -e "s|\$(NBVAL)|$(sed -n 's/^NBVAL := //p' Makefile)|g" \
      -e "s|\$(SANITIZE)|$(sed -n 's/^SANITIZE := //p' Makefile)|g"
}

main() {
  echo "bench/cuda.sh $(date -u +%FT%TZ), budget $BUDGET s, evidence in $OUT"
  if compgen -G ".whl/*.whl" >/dev/null; then
    step wheels 120 - "$PYTHON" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir \
      --upgrade --target "$SITE" .whl/*.whl || missed+=("install every wheel of .whl/")
    export PYTHONPATH=$SITE${PYTHONPATH:+:$PYTHONPATH}
  else
    missed+=("install wheels: no .whl/ here (run ../shared/device/wheels.sh, then carry .whl)")
  fi
  { step nvidia-smi 30 - nvidia-smi || missed+=("run nvidia-smi"); } > "$OUT/env.txt"
  step versions 90 "$OUT/versions.tmp" "$PYTHON" bench/cuda_report.py versions ||
    missed+=("import everything the notebooks import (env.txt: 'import fails')")
  cat "$OUT/versions.tmp" >> "$OUT/env.txt" 2>/dev/null && rm -f "$OUT/versions.tmp"
  if command -v make >/dev/null && [[ -z ${NO_MAKE:-} ]]; then
    kernels=(make --no-print-directory kernels PYTHON="$PYTHON")
    test_cuda=(make --no-print-directory test-cuda PYTHON="$PYTHON")
  else
    missed+=("use make (none here): the Makefile's recipes for kernels and test-cuda ran through bash")
    kernels=(bash -ec "$(recipe kernels)")
    test_cuda=(bash -ec "$(recipe test-cuda)")
  fi
  step kernels 60 - "${kernels[@]}" || missed+=("register the kernels")

  # pytest and pluggy come from .whl; the machine's own pytest plugins (xdist, benchmark, cov, ...)
  # were built for its pytest, so none loads but nbval.
  export PYTEST_DISABLE_PLUGIN_AUTOLOAD=1
  export PYTEST_ADDOPTS="-p nbval.plugin -v --junitxml=$OUT/test-cuda.xml --durations=15"
  step test-cuda 300 - "${test_cuda[@]}"
  tests=$?
  unset PYTEST_DISABLE_PLUGIN_AUTOLOAD PYTEST_ADDOPTS
  ((tests == 0)) || missed+=("pass make test-cuda (exit $tests)")

  if [[ -n ${SKIP_BENCH:-} ]]; then   # a rerun after a fix: the tests again, the bench already kept
    missed+=("run the CUDA bench: SKIP_BENCH is set")
  elif timeout 60 "$PYTHON" -c 'import sys, torch; sys.exit(not torch.cuda.is_available())' 2>/dev/null; then
    PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} step bench 420 "$OUT/bench.txt" "$PYTHON" bench/run.py \
      --kernel book-cuda --skip-one-core --keep-going --executed "$OUT/executed" || missed+=("finish the CUDA bench")
    [[ -d $OUT/executed ]] && tar -czf "$OUT/executed.tar.gz" -C "$OUT" executed && rm -rf "$OUT/executed"
  else
    missed+=("run the CUDA bench: torch sees no GPU")
  fi

  echo "bench/cuda.sh: the steps took $((SECONDS - started)) s; summary.txt (its last line: what could not be done):"
  timeout 30 "$PYTHON" bench/cuda_report.py report "$OUT" "${missed[@]}" ||
    echo "could not: write summary.txt and the draft (bench/cuda_report.py failed); ${missed[*]}"
  return "$tests"
}

main 2>&1 | tee "$OUT/log.txt"
exit "${PIPESTATUS[0]}"
