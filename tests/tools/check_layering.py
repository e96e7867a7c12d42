#!/usr/bin/env python3
"""Checks docs/style.md 1.3 on the includes of kiln/ and tests/ and prints each violation as
file:line; exits 1 if there is any. Rules:
  1. `#include "kiln/<layer>/..."` and `#include <kiln/<layer>/...>` follow the layer table;
     runtime/cpu and runtime/cuda never include each other.
  2. No relative includes ("../x.h", "./x.h"): every project include names its path from the root.
  3. An internal header (`*_impl.h`) is included only from its own layer (tests: from the tests
     of that layer, tests/<layer>/).
  4. A public header (kiln/**/*.h, not *_impl.h) includes no third-party library header: it is
     installed, and a user's build must not need hdf5.h, dnnl.hpp, omp.h, ... to include it.
`check_layering.py [ROOT]` (default: the repository). tests/tools/layering_fixture/ is a tree
that breaks every rule once; ctest checks that it fails."""
import pathlib
import re
import sys

# Which kiln folders each folder may include (itself always allowed).
ALLOWED = {
    "core": set(),
    "ir": {"core"},
    "compiler": {"core", "ir"},
    "runtime": {"core", "ir", "compiler"},
    # trace/ traces dataset map functions (traced_map.h), as tf.function does for tf.data.
    "trace": {"core", "ir", "compiler", "runtime", "data"},
    "distribute": {"core", "ir", "compiler", "runtime", "trace", "data"},
    "keras": {"core", "ir", "compiler", "runtime", "trace", "distribute", "data", "io"},
    "data": {"core"},
    "io": {"core"},
}
# runtime/cpu and runtime/cuda must not include each other.
SIBLINGS = {"runtime/cpu": "runtime/cuda", "runtime/cuda": "runtime/cpu"}
KILN_INCLUDE = re.compile(r'^\s*#\s*include\s+["<]kiln/([a-z_]+)(/[a-z_]+)?([^">]*)[">]')
RELATIVE_INCLUDE = re.compile(r'^\s*#\s*include\s+"\.\.?/')
ANGLE_INCLUDE = re.compile(r'^\s*#\s*include\s+<([^>]+)>')
# Third-party libraries Kiln uses (or may): never in a public header.
THIRD_PARTY = re.compile(r'^(hdf5|H5[A-Za-z]*\.h|dnnl|oneapi/|nlohmann/|llvm/|llvm-c/|mpi\.h|omp\.h|cuda|cudnn|cublas|'
                         r'nccl|nvrtc|zlib\.h|zip\.h|gtest/|gmock/|benchmark/)')


def layer_of(rel_parts):
    return rel_parts[1] if len(rel_parts) > 2 else None


def check_file(root, path, errors):
    rel = path.relative_to(root).parts
    where = str(path.relative_to(root))
    in_kiln = rel[0] == "kiln"
    src = layer_of(rel)
    public_header = in_kiln and path.suffix == ".h" and not path.name.endswith("_impl.h")
    src_sub = "/".join(rel[1:3])
    for n, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
        if RELATIVE_INCLUDE.match(line):
            errors.append(f"{where}:{n}: relative include; name the path from the repository root (kiln/...)")
            continue
        angle = ANGLE_INCLUDE.match(line)
        if public_header and angle and THIRD_PARTY.match(angle.group(1)):
            errors.append(f"{where}:{n}: public header includes third-party <{angle.group(1)}>; "
                          "move it to an _impl.h or a .cpp")
        m = KILN_INCLUDE.match(line)
        if not m:
            continue
        dst, dst_sub_part, rest = m.group(1), m.group(2) or "", m.group(3) or ""
        dst_sub = dst + dst_sub_part
        if (dst_sub_part + rest).endswith("_impl.h") and src != dst:
            errors.append(f"{where}:{n}: {'/'.join(rel[:2])}/ includes kiln/{dst}/'s internal header "
                          f"{(dst_sub_part + rest).lstrip('/')}")
        if src not in ALLOWED:  # umbrella headers, e2e tests, testing helpers
            continue
        if dst != src and dst not in ALLOWED[src]:
            errors.append(f"{where}:{n}: {src}/ may not include kiln/{dst}/")
        if SIBLINGS.get(src_sub) == dst_sub:
            errors.append(f"{where}:{n}: {src_sub}/ may not include kiln/{dst_sub}/")


def main(root):
    root = pathlib.Path(root)
    errors = []
    for base in ("kiln", "tests"):
        for path in sorted((root / base).rglob("*")):
            if path.suffix not in (".h", ".cpp", ".cc", ".cu", ".def"):
                continue
            if "layering_fixture" in path.relative_to(root).parts:  # the negative fixture, checked alone
                continue
            check_file(root, path, errors)
    for e in errors:
        print(e)
    print(f"check_layering: {len(errors)} violation(s)")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).resolve().parents[2]))
