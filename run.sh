#!/usr/bin/env bash
# Checkpoint Lab — the one set-up script.
#   ./run.sh            install what is missing, build, open the app on its default sample
#   ./run.sh test       the same set-up, then the whole test suite (ctest)
#   ./run.sh build      the same set-up and build only
#   ./run.sh sanitize   ASan+UBSan build (CUDA off) and its engine and cli tests
#   ./run.sh screenshots  build, then regenerate the README's screenshots (docs/screenshots/)
#   ./run.sh package    a portable build (build-package/), then its .deb (cpack -G DEB)
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
    configure_and_build "$here/build-asan" -DCKPTLAB_SANITIZE=ON -DCKPTLAB_CUDA=OFF -DCMAKE_BUILD_TYPE=Debug
    cd "$here/build-asan"
    export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0
    export LSAN_OPTIONS=suppressions=$here/.ci/lsan.supp
    export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
    # Two at a time: the sanitized HeavyModel tests are long and mostly single-threaded.
    QT_QPA_PLATFORM=offscreen ctest --output-on-failure --parallel "$(nproc)" -L 'engine|cli|stress' "$@"
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
    echo "usage: ./run.sh [gui|test|build|sanitize|screenshots|package] [args...]" >&2
    exit 2
    ;;
esac
