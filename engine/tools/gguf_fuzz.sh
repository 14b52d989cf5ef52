#!/usr/bin/env bash
# Build the GGUF fuzz drivers with clang + ASan + UBSan and run libFuzzer.
#   engine/tools/gguf_fuzz.sh [RUNS] [EXTRA_SEED_GGUF...]
# Seeds: the small GGUFs the test suite writes (tests/gguf/gguf_mutator.py), plus
# any GGUF files given. Output: build/fuzz/{libfuzzer.log,corpus,crash-*}.
set -euo pipefail
cd "$(dirname "$0")/../.."
runs=${1:-1000000}
shift || true
build=build/fuzz
CXX=${CXX:-clang++-19} cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DDS4KIT_TOOLS=ON -DDS4KIT_SANITIZE=ON -Dpybind11_DIR="$(python3 -m pybind11 --cmakedir)" >/dev/null
cmake --build "$build" --target gguf_fuzz gguf_fuzz_standalone -j"${JOBS:-2}"
PYTHONPATH=tests/gguf python3 -c "from pathlib import Path; import gguf_mutator; gguf_mutator.seed_files(Path('$build/seeds'))"
for f in "$@"; do cp "$f" "$build/seeds/"; done
mkdir -p "$build/corpus"
cd "$build"
rc=0
./engine/tools/gguf_fuzz -runs="$runs" -seed=20261129 -max_len=16384 -timeout=10 -rss_limit_mb=2048 \
  -print_final_stats=1 corpus seeds >libfuzzer.log 2>&1 || rc=$?
grep -E "^(INFO: Seed|#[0-9]+[[:space:]]+DONE|stat::|==[0-9]+==ERROR|SUMMARY)" libfuzzer.log || true
exit $rc  # non-zero when libFuzzer found a crash (the input is saved as build/fuzz/crash-*)
