#!/usr/bin/env python3
"""Checks STYLE.md 1.3: every `#include "kiln/<layer>/..."` in kiln/ and tests/ follows the
layer table. Prints each violation as file:line and exits 1 if there is any."""
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
INCLUDE = re.compile(r'^\s*#\s*include\s+"kiln/([a-z_]+)(/[a-z_]+)?')


def layer_of(rel_parts):
    return rel_parts[1] if len(rel_parts) > 2 else None


def main(root):
    root = pathlib.Path(root)
    errors = []
    for base in ("kiln", "tests"):
        for path in sorted((root / base).rglob("*")):
            if path.suffix not in (".h", ".cpp", ".cc", ".cu", ".def"):
                continue
            rel = path.relative_to(root).parts
            src = layer_of(rel)
            if src not in ALLOWED:  # umbrella headers, e2e tests, testing helpers
                continue
            src_sub = "/".join(rel[1:3])
            for n, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
                m = INCLUDE.match(line)
                if not m:
                    continue
                dst = m.group(1)
                dst_sub = dst + (m.group(2) or "")
                if dst != src and dst not in ALLOWED[src]:
                    errors.append(f"{path.relative_to(root)}:{n}: {src}/ may not include kiln/{dst}/")
                if SIBLINGS.get(src_sub) == dst_sub:
                    errors.append(f"{path.relative_to(root)}:{n}: {src_sub}/ may not include kiln/{dst_sub}/")
    for e in errors:
        print(e)
    print(f"check_layering: {len(errors)} violation(s)")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).resolve().parents[2]))
