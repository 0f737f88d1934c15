#!/bin/bash
# FSDP2 per rank on a GPU (issue 39): one command on a machine with an NVIDIA GPU and PyTorch
# 2.6 or later (fully_shard, the fake process group):
#
#   tests/oracle/fsdp/run.sh [OUT]
#
# runs every case of cases.jsonl in its own process (the caching allocator starts empty) and
# writes their figures, one JSON line each, to OUT (default: tests/oracle/data/
# gpu_oracle_fsdp.jsonl, where test_oracle_fsdp reads them). A case's stderr goes to
# OUT.err/<case>.txt. fsdp_oracle.py and cases.jsonl are ../shared/reference/gpu-oracle/fsdp's,
# the script also printing the GPU's name.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-$here/../data/gpu_oracle_fsdp.jsonl}
python=${PYTHON:-python3}
"$python" - <<'PY'
import sys, torch
from torch.distributed.fsdp import fully_shard  # noqa: F401  (PyTorch 2.6+)
if not torch.cuda.is_available():
    sys.exit("run.sh: no CUDA device: the FSDP oracle measures a GPU's caching allocator")
print(torch.cuda.get_device_name(0), "PyTorch", torch.__version__, file=sys.stderr)
PY
mkdir -p "$(dirname "$out")" "$out.err"
: > "$out.tmp"
while IFS= read -r line; do
  [[ $line == \{* ]] || continue
  name=$("$python" -c 'import json,sys; print(json.loads(sys.argv[1])["case"])' "$line")
  echo "fsdp oracle: $name" >&2
  if ! timeout 300 "$python" "$here/fsdp_oracle.py" "$line" 2>"$out.err/$name.txt" >>"$out.tmp"; then
    echo "fsdp oracle: $name failed (see $out.err/$name.txt)" >&2
  fi
done < "$here/cases.jsonl"
mv "$out.tmp" "$out"
echo "wrote $out: $(wc -l < "$out") cases" >&2
