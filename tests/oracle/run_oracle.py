"""Runs oracle cases in PyTorch.

  run_oracle.py OUT_DIR [CASE ...]            the named cases (no case: all of them)
  run_oracle.py OUT_DIR --families FAM ...    every case FAM or FAM@variant
  run_oracle.py --list                        the case names

OUT_DIR/index.json lists the cases written, in order.

Case modules are the cases_*.py files next to this script. A case that fails writes
OUT_DIR/<case>/error.txt (with the traceback) instead of its manifest, so that the C++ test
reports it as that case's failure; an unknown case name is such a failure too.
"""

import glob
import json
import importlib
import os
import sys
import traceback

import torch

sys.dont_write_bytecode = True  # keep the source tree clean
here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)

import oracle_harness  # noqa: E402


def main(argv):
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    if argv[1] == "--list":
        load_cases()
        print("\n".join(sorted(oracle_harness.CASES)))
        return 0
    out_dir = argv[1]
    load_cases()
    names = argv[2:] or sorted(oracle_harness.CASES)
    if names and names[0] == "--families":
        families = names[1:]
        names = []
        for fam in families:
            found = [n for n in sorted(oracle_harness.CASES) if n.split("@")[0] == fam]
            names += found or [fam]  # an unknown family becomes that case's error
    torch.set_num_threads(1)
    failed = 0
    for name in names:
        d = os.path.join(out_dir, name)
        os.makedirs(d, exist_ok=True)
        try:
            if name not in oracle_harness.CASES:
                raise KeyError(f"no PyTorch case named {name!r} in {here}/cases_*.py")
            oracle_harness.run_case(name, out_dir)
        except Exception:  # reported per case to the C++ side
            failed += 1
            with open(os.path.join(d, "error.txt"), "w") as fh:
                fh.write(traceback.format_exc())
    with open(os.path.join(out_dir, "index.json"), "w") as fh:
        json.dump(names, fh)
    print(f"run_oracle: {len(names) - failed} cases written, {failed} failed", file=sys.stderr)
    return 0


def load_cases():
    for path in sorted(glob.glob(os.path.join(here, "cases_*.py"))):
        importlib.import_module(os.path.splitext(os.path.basename(path))[0])


if __name__ == "__main__":
    sys.exit(main(sys.argv))
