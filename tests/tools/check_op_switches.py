#!/usr/bin/env python3
"""Checks STYLE.md's rule that a switch over ir::Opcode or codegen::LoopOp has no `default:`:
with every op listed, the compiler's -Wswitch names each switch that a new op must be added to,
instead of the op silently taking the default (issue 34). A switch is over an op enum when one
of its own case labels names `Opcode::k...`, `LoopOp::k...` or `Op::k...` (the interpreter's
alias); the elementwise table's rows are listed with `#include "kiln/ir/elementwise_cases.inc"`.
Prints each `default:` of such a switch as file:line and exits 1 if there is any.
`check_op_switches.py [ROOT]` (default: the repository) reads ROOT/kiln/**.{h,cpp,inc}.
tests/tools/op_switch_fixture/ holds one switch of each kind; ctest checks that it finds 3."""
import pathlib
import re
import sys

OP_LABEL = re.compile(r"\bcase\s+(?:[\w:]*::)?(?:Opcode|LoopOp|Op)::k\w*")
SWITCH = re.compile(r"\bswitch\s*\(")
ROW_CASES = re.compile(r'#include\s*"kiln/ir/elementwise_cases\.inc"')


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
            elif code.startswith("#include", i) and ROW_CASES.match(text, i):
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
        for line in violations(path.read_text(errors="replace")):
            print(f"{rel}:{line}: default: in a switch over an op enum")
            failures += 1
    print(f"check_op_switches: {failures} violation(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
