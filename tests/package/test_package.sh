#!/usr/bin/env bash
# The .deb as a user gets it: cpack builds it from this build tree, dpkg -x unpacks it into a
# temporary root (no root rights needed), and the installed programs run from there: the CLI on
# an installed sample by name, the app with --screenshot.
set -euo pipefail
build=$1
fail() { echo "test_package: $*" >&2; exit 1; }
command -v dpkg-shlibdeps >/dev/null || fail "dpkg-shlibdeps is missing: install dpkg-dev"
# Outside the build tree, so that the installed ckptlab-cli cannot fall back to the source's
# samples: finding them proves the installed lookup.
work=$(mktemp -d "${TMPDIR:-/tmp}/ckptlab-package-test.XXXXXX")
trap 'rm -rf "$work"' EXIT

start=$(date +%s)
cpack --config "$build/CPackConfig.cmake" -G DEB -B "$work/out" >"$work/cpack.log" 2>&1 ||
  { cat "$work/cpack.log" >&2; fail "cpack -G DEB failed"; }
debs=("$work"/out/ckptlab_*.deb)
deb=${debs[0]}
[ -f "$deb" ] || fail "cpack made no ckptlab_*.deb"
echo "package: $(basename "$deb"), $(($(stat -c %s "$deb") / 1024)) KiB, $(($(date +%s) - start)) s"

contents=$(dpkg-deb -c "$deb")
for f in usr/bin/ckptlab usr/bin/ckptlab-cli usr/share/applications/ckptlab.desktop \
  usr/share/icons/hicolor/scalable/apps/ckptlab.svg usr/share/mime/packages/ckptlab.xml \
  usr/share/man/man1/ckptlab.1.gz usr/share/man/man1/ckptlab-cli.1.gz \
  usr/share/ckptlab/samples/densenet_block.json usr/share/ckptlab/samples/tiny_resnet.onnx \
  usr/lib/python3/dist-packages/ckptlab_capture.py; do
  grep -q " \./$f\$" <<<"$contents" || fail "not in the package: /$f"
done
depends=$(dpkg-deb -f "$deb" Depends)
for d in graphviz libqt6widgets6 libc6; do
  grep -q "$d" <<<"$depends" || fail "Depends lacks $d: $depends"
done
echo "Depends: $depends"

root=$work/root
dpkg -x "$deb" "$root"
export XDG_CONFIG_HOME=$work/config XDG_CACHE_HOME=$work/cache XDG_DATA_HOME=$work/data

out=$("$root/usr/bin/ckptlab-cli" run densenet_block --no-baseline 2>&1) ||
  { echo "$out" >&2; fail "the installed ckptlab-cli could not run the sample densenet_block"; }
grep -q "densenet_block" <<<"$out" && grep -q "peak" <<<"$out" ||
  { echo "$out" >&2; fail "the installed CLI's run printed no model name or peak"; }
# The installed capture module, as Debian's python3 imports it, and its file in the installed CLI.
capture=$(PYTHONPATH="$root/usr/lib/python3/dist-packages" /usr/bin/python3 -c '
import sys, torch, ckptlab_capture
ckptlab_capture.capture(torch.nn.Linear(3, 2), torch.randn(4, 3), sys.argv[1])' \
  "$work/linear.capture.json" 2>&1) || { echo "$capture" >&2; fail "the installed ckptlab_capture failed"; }
out=$("$root/usr/bin/ckptlab-cli" run "$work/linear.capture.json" --dry-run --no-baseline 2>&1) ||
  { echo "$out" >&2; fail "the installed ckptlab-cli could not run a capture"; }

status=0
missing=$("$root/usr/bin/ckptlab-cli" run no_such_sample 2>&1) || status=$?
[ "$status" -eq 3 ] || fail "an unknown sample name exits $status, not 3: $missing"
grep -q "$root/usr/share/ckptlab/samples" <<<"$missing" ||
  fail "an unknown sample's message does not name the installed samples folder: $missing"

QT_QPA_PLATFORM=offscreen "$root/usr/bin/ckptlab" --timeout 120 --screenshot "$work/shot.png" \
  "$root/usr/share/ckptlab/samples/mlp.json" || fail "the installed ckptlab --screenshot failed"
[ -f "$work/shot.png" ] || fail "ckptlab --screenshot wrote no PNG"
/usr/bin/python3 - "$work/shot.png" <<'PY' || fail "the screenshot is no 1440x900 picture"
import struct, sys
data = open(sys.argv[1], "rb").read()
assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
w, h = struct.unpack(">II", data[16:24])
assert (w, h) == (1440, 900), (w, h)
# A blank or single-colour window compresses to a few KiB; the real one is far larger.
assert len(data) > 40000, len(data)
print(f"screenshot: {w}x{h}, {len(data) // 1024} KiB")
PY
[ -z "$(find "$work/config" -type f 2>/dev/null)" ] || fail "a --screenshot run wrote settings"
echo "test_package: ok"
