#!/usr/bin/env bash
# Regenerates the README's screenshots from the real app (offscreen, after the first run and
# layout): ./run.sh screenshots, or docs/screenshots/regenerate.sh path/to/ckptlab
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
app=${1:-$here/../../build/app/gui/ckptlab}
# A clean profile so that saved window state and layout caches do not leak into the pictures.
profile=$(mktemp -d)
trap 'rm -rf "$profile"' EXIT
export QT_QPA_PLATFORM=offscreen XDG_CONFIG_HOME=$profile/config XDG_CACHE_HOME=$profile/cache

shot() {
  local name=$1; shift
  echo "screenshot: $name" >&2
  "$app" --size 1440x900 --screenshot "$here/$name.png" "$@"
}

# The first five minutes: the default sample, then one block checkpointed with its recompute.
shot densenet_block --at forward-end
shot densenet_block_checkpointed --checkpoint features.denseblock1.denselayer1.bottleneck \
  --checkpoint features.denseblock1.denselayer2.bottleneck \
  --checkpoint features.denseblock1.denselayer3.bottleneck --at recompute
# The blog's HeavyModel (1,000 collapsed calls), and a reentrant pitfall's warning.
shot heavy_model :/samples/heavy_model.json --at forward-end
shot subnet_no_grad :/samples/subnet_no_grad_inputs.json \
  --checkpoint net --at forward-end
# A model bigger than this machine: GPT-2 small at batch 32 as a dry run (exact bytes, estimated
# times), every block checkpointed; the memory guard says why no real run follows.
shot gpt2_small_dry_run :/samples/gpt2_small.json $(for i in $(seq 0 11); do echo --checkpoint h.$i; done) \
  --at peak
# A whole training step on a GPU: GPT-2 small at batch 8 under CUDA's memory semantics with
# AdamW, whose state is live from the start and whose step ends the run.
shot training_step :/samples/gpt2_small.json --device cuda --optimizer adamw --batch 8 --at peak
# One rank of eight: Llama 3 8B sharded with FSDP2 (the Ranks control), its per-rank bands, on
# the smallest screen the app supports.
echo "screenshot: llama3_8b_fsdp8" >&2
"$app" --size 1366x768 --screenshot "$here/llama3_8b_fsdp8.png" :/samples/llama3_8b.json \
  --device cuda --optimizer adamw --param-dtype bf16 --fsdp 8 --at peak
# A measured snapshot (the GPU oracle's H200 run of the DenseNet sample) over the engine's run.
shot measured_snapshot :/samples/densenet_block.json \
  --snapshot "$here/../../tests/engine/data/snapshots/densenet_block__plain.pickle"
# The first window as a first start opens it on three screens, under a real X server (Xvfb): the
# window's own size and docks for that screen, not --size.
for screen in 1366x768 1440x900 1920x1080; do
  echo "screenshot: first_window_$screen (Xvfb)" >&2
  rm -rf "$profile/config"
  xvfb-run -a -s "-screen 0 ${screen}x24" env -u QT_QPA_PLATFORM \
    "$app" --screenshot "$here/first_window_$screen.png"
done
# Pinned comparisons: test_ui_pins pins two configurations of the DenseNet sample, switches the
# variant and grabs the window (through ctest, which gives it its screen and sample paths).
echo "screenshot: pinned_comparisons (test_ui_pins)" >&2
CKPTLAB_SCREENSHOT_DIR=$here ctest --test-dir "$(dirname "$app")/../.." -R '^test_ui_pins$' \
  --output-on-failure >&2
