#!/usr/bin/env bash
# Checkpoint Lab — the one set-up script.
#   ./run.sh            install what is missing, build, open the app on its default sample
#   ./run.sh test       the same set-up, then the whole test suite (ctest)
#   ./run.sh build      the same set-up and build only
#   ./run.sh sanitize   ASan+UBSan build (CUDA off) and its engine and cli tests
#   ./run.sh tsan       ThreadSanitizer build (CUDA off) of the engine's tests that run threads
#   ./run.sh screenshots  build, then regenerate the README's screenshots (docs/screenshots/)
#   ./run.sh package    a portable build (build-package/), then its .deb (cpack -G DEB)
#   ./run.sh fuzz [SECONDS | --runs N]  libFuzzer build (clang, ASan+UBSan) of the loaders; each target runs
#                        SECONDS (default 60), one after another, seeded from samples/ and tests
# Extra arguments after the mode are passed to the program (or to ctest).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
mode=${1:-gui}
[ $# -gt 0 ] && shift

packages=(
  build-essential cmake ninja-build pkg-config git
  qt6-base-dev qt6-charts-dev libqt6opengl6-dev qt6-svg-dev libgl-dev qt6-qpa-plugins
  libeigen3-dev nlohmann-json3-dev
  libonnx-dev libprotobuf-dev protobuf-compiler libonnx-testdata
  graphviz
  python3-torch python3-torchvision python3-numpy python3-onnx libopenblas0-openmp
  xvfb xauth clang-format
  dpkg-dev
  clang libclang-rt-14-dev
)

install_missing() {
  local missing=()
  for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "run.sh: installing ${missing[*]}" >&2
  local sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
}

configure_and_build() {
  local dir=$1; shift
  cmake -S "$here" -B "$dir" -G Ninja -DPython3_EXECUTABLE=/usr/bin/python3 "$@"
  cmake --build "$dir" --parallel "$(nproc)"
}

# Each target's corpus starts from the inputs the project already has (build-fuzz/corpus/<target>,
# kept between runs); a crash input lands in build-fuzz/findings/<target>/ and the run fails.
# `fuzz SECONDS` runs each target that long; `fuzz --runs N` runs N inputs from seed 1, the same
# inputs every time (CI: a finding there is one a person can replay, never a roll of the dice).
fuzz() {
  local dir="$here/build-fuzz" limit what
  if [ "${1:-}" = --runs ]; then
    limit=(-runs="$2" -seed=1)
    what="$2 inputs from seed 1"
  else
    limit=(-max_total_time="${1:-60}")
    what="${1:-60} s"
  fi
  CC=clang CXX=clang++ cmake -S "$here" -B "$dir" -G Ninja -DCKPTLAB_FUZZ=ON -DCKPTLAB_CUDA=OFF \
    -DCKPTLAB_BUILD_UI=OFF -DCKPTLAB_BUILD_TESTS=OFF -DCMAKE_BUILD_TYPE=Fuzz \
    -DCMAKE_CXX_FLAGS_FUZZ="-O1 -g"
  cmake --build "$dir" --parallel "$(nproc)" --target fuzz_onnx_model fuzz_json_model \
    fuzz_capture_model fuzz_npy fuzz_dot_json fuzz_memory_snapshot
  # Not the 100,000-op HeavyModel samples nor GPT-2 small (124M parameters drawn at load): under
  # ASan loading one takes longer than -timeout.
  local -A seeds=(
    [onnx_model]="$here/samples/*.onnx $here/tests/engine/data/*.onnx"
    [json_model]="$(ls "$here"/samples/*.json | grep -v -e heavy_model -e gpt2_small)"
    [capture_model]="$here/tests/fuzz/seeds/capture_model/*"
    [npy]="$here/tests/fuzz/seeds/npy/*"
    [dot_json]="$here/tests/fuzz/seeds/dot_json/*"
    [memory_snapshot]="$here/tests/fuzz/seeds/memory_snapshot/*"
  )
  export ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
  local t failed=0 summary=()
  mkdir -p "$dir/logs"
  for t in onnx_model json_model capture_model npy dot_json memory_snapshot; do
    mkdir -p "$dir/corpus/$t" "$dir/findings/$t"
    # shellcheck disable=SC2086
    cp -n ${seeds[$t]} "$dir/corpus/$t/" 2>/dev/null || true
    cp -n "$here/tests/fuzz/regressions/$t/"* "$dir/corpus/$t/" 2>/dev/null || true
    if [ "$t" = onnx_model ]; then
      # ONNX's own backend node tests (libonnx-testdata): one small model per op.
      local m
      for m in /usr/share/libonnx-testdata/data/node/*/model.onnx; do
        [ -f "$m" ] && cp -n "$m" "$dir/corpus/$t/$(basename "$(dirname "$m")").onnx"
      done
    fi
    echo "run.sh fuzz: $t, $what (log: $dir/logs/$t.log)" >&2
    # libFuzzer's progress lines go to the log; a finding's report is printed below, so that
    # the end of CI's output says which target failed and on what input (libFuzzer's Base64).
    if "$dir/tests/fuzz/fuzz_$t" "${limit[@]}" -timeout=10 -rss_limit_mb=2048 \
      -max_len=65536 -print_final_stats=1 -artifact_prefix="$dir/findings/$t/" \
      "$dir/corpus/$t" >"$dir/logs/$t.log" 2>&1; then
      summary+=("$t: ok, $(grep -m1 -o 'number_of_executed_units: [0-9]*' "$dir/logs/$t.log")")
    else
      failed=1
      summary+=("$t: FINDING, in $dir/findings/$t/ (its report is above)")
      grep -v -e '^#[0-9]' -e '# Uses:' "$dir/logs/$t.log" | tail -n 60 >&2
    fi
  done
  printf 'run.sh fuzz: %s\n' "${summary[@]}" >&2
  return $failed
}

install_missing
case "$mode" in
  gui)
    configure_and_build "$here/build"
    exec "$here/build/app/gui/ckptlab" "$@"
    ;;
  build)
    configure_and_build "$here/build"
    ;;
  test)
    configure_and_build "$here/build"
    cd "$here/build"
    QT_QPA_PLATFORM=offscreen ctest --output-on-failure -LE 'bench|stress' "$@"
    ;;
  sanitize)
    # Only what the tests run here need (their labels below): not the app, nor the other window
    # tests. Every target named like one of those tests, the CLI, and the window suite whose
    # 200-random-toggles test is labelled stress.
    labels='engine|cli|stress'
    cmake -S "$here" -B "$here/build-asan" -G Ninja -DPython3_EXECUTABLE=/usr/bin/python3 \
      -DCKPTLAB_SANITIZE=ON -DCKPTLAB_CUDA=OFF -DCMAKE_BUILD_TYPE=Debug
    cd "$here/build-asan"
    known=$(ninja -t targets all | cut -d: -f1)
    targets=(ckptlab-cli test_ui_main_window)
    while read -r t; do
      grep -qx "$t" <<<"$known" && targets+=("$t")
    done < <(ctest -N -L "$labels" | sed -n 's/^ *Test *#[0-9]*: //p')
    cmake --build . --parallel "$(nproc)" --target "${targets[@]}"
    export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0
    export LSAN_OPTIONS=suppressions=$here/.ci/lsan.supp
    export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
    # Two at a time: the sanitized HeavyModel tests are long and mostly single-threaded.
    QT_QPA_PLATFORM=offscreen ctest --output-on-failure --parallel "$(nproc)" -L "$labels" "$@"
    ;;
  tsan)
    # The engine's own threads: concurrent runs sharing the storage pool, Runners on several
    # threads at once. One OpenMP thread: libgomp is not instrumented, so its barriers would
    # read as races. The UI's RunController hands its runs to Qt's thread pool, whose
    # synchronisation an uninstrumented Qt hides from TSan (every hand-over reads as a race), so
    # its tests are not run here (README, Reliability).
    tsan_tests=(test_engine_pool test_engine_runner)
    cmake -S "$here" -B "$here/build-tsan" -G Ninja -DPython3_EXECUTABLE=/usr/bin/python3 \
      -DCKPTLAB_TSAN=ON -DCKPTLAB_CUDA=OFF -DCKPTLAB_BUILD_UI=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo
    cmake --build "$here/build-tsan" --parallel "$(nproc)" --target "${tsan_tests[@]}"
    cd "$here/build-tsan"
    export TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 suppressions=$here/.ci/tsan.supp"
    OMP_NUM_THREADS=1 ctest --output-on-failure -R "^($(IFS='|'; echo "${tsan_tests[*]}"))\$" "$@"
    ;;
  fuzz)
    fuzz "$@"
    ;;
  screenshots)
    configure_and_build "$here/build"
    "$here/docs/screenshots/regenerate.sh" "$here/build/app/gui/ckptlab"
    ;;
  package)
    # Its own build: without -march=native, so that the .deb runs on any x86-64 machine.
    configure_and_build "$here/build-package" -DCKPTLAB_NATIVE=OFF -DCKPTLAB_BUILD_TESTS=OFF
    cd "$here/build-package"
    cpack -G DEB "$@"
    echo "run.sh: install it with: sudo apt install $here/build-package/$(ls -t ckptlab_*.deb | head -1)"
    ;;
  *)
    echo "usage: ./run.sh [gui|test|build|sanitize|tsan|fuzz|screenshots|package] [args...]" >&2
    exit 2
    ;;
esac
