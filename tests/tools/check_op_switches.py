#!/usr/bin/env python3
"""Checks STYLE.md's rule that a switch over ir::Opcode or codegen::LoopOp has no `default:`:
with every op listed, the compiler's -Wswitch names each switch that a new op must be added to,
instead of the op silently taking the default (issue 34). A switch is over an op enum when one
of its own case labels names `Opcode::k...`, `LoopOp::k...` or `Op::k...` (the interpreter's
alias). Prints each `default:` of such a switch as file:line and exits 1 if there is one more
than KNOWN lists for its file; a KNOWN count larger than what is found fails too, so the list
only shrinks.
`check_op_switches.py [ROOT]` (default: the repository) reads ROOT/kiln/**.{h,cpp,inc}.
tests/tools/op_switch_fixture/ holds one switch of each kind; ctest checks that it finds 2."""
import pathlib
import re
import sys

# Switches over an op enum that still have a `default:`, per file: issue 34 item 2 (a lowering
# visitor) removes them. Remove a file's entry, or lower its count, when its defaults go.
KNOWN = {
    "kiln/compiler/codegen/gpu_index_kernels.cpp": 1,
    "kiln/compiler/codegen/loop_ir.cpp": 1,
    "kiln/compiler/memory_planning.cpp": 1,
    "kiln/compiler/passes/constant_folding.cpp": 1,
    "kiln/compiler/passes/cse.cpp": 1,
    "kiln/compiler/passes/ir_patterns.cpp": 1,
    "kiln/compiler/passes/loop_invariant_hoisting.cpp": 1,
    "kiln/compiler/passes/output_fusion.cpp": 1,
    "kiln/ir/printer.cpp": 1,
    "kiln/ir/reference_eval_contraction.cpp": 1,
    "kiln/ir/reference_eval_shape.cpp": 1,
    "kiln/ir/shape_inference.cpp": 1,
    "kiln/runtime/cpu/onednn_convolution.cpp": 1,
    "kiln/runtime/cpu/reduce_kernel_exec.inc": 3,
    "kiln/runtime/cuda/cudnn_ops.cpp": 1,
    "kiln/trace/batching.cpp": 1,
}

OP_LABEL = re.compile(r"\bcase\s+(?:[\w:]*::)?(?:Opcode|LoopOp|Op)::k\w*")
SWITCH = re.compile(r"\bswitch\s*\(")


def strip(text):
    """Comments and string/char literals become spaces (newlines kept, so lines still count)."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(" " * (min(j + 1, n) - i))
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def violations(text):
    """(line, is_op_switch) for every `default:` directly inside an op switch of `text`."""
    code = strip(text)
    found = []
    for m in SWITCH.finditer(code):
        body = code.find("{", m.end())
        if body < 0:
            continue
        depth, i, labels, defaults = 0, body, [], []
        while i < len(code):
            ch = code[i]
            if ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
                if depth == 0:
                    break
            elif code.startswith("switch", i) and SWITCH.match(code, i):
                # A nested switch: its labels and default are its own (checked on their own).
                inner = code.find("{", i)
                d, k = 0, inner
                while k < len(code):
                    d += code[k] == "{"
                    d -= code[k] == "}"
                    if d == 0:
                        break
                    k += 1
                i = k
            elif code.startswith("case", i) and OP_LABEL.match(code, i):
                labels.append(i)
            elif code.startswith("default", i) and re.match(r"default\s*:", code[i:]):
                defaults.append(i)
            i += 1
        if labels:
            found += [code.count("\n", 0, d) + 1 for d in defaults]
    return found


def main():
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).resolve().parents[2])
    failures = 0
    for path in sorted(p for ext in ("h", "cpp", "inc") for p in (root / "kiln").rglob(f"*.{ext}")):
        rel = path.relative_to(root).as_posix()
        lines = violations(path.read_text(errors="replace"))
        known = KNOWN.get(rel, 0)
        for line in lines:
            print(f"{rel}:{line}: default: in a switch over an op enum" + (" (known)" if known else ""))
        if len(lines) > known:
            failures += len(lines) - known
        elif len(lines) < known:
            print(f"{rel}: KNOWN lists {known}, found {len(lines)}: lower its entry in {pathlib.Path(__file__).name}")
            failures += 1
    print(f"check_op_switches: {failures} violation(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
