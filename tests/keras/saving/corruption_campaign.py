#!/usr/bin/env python3
"""Corruption campaign over the files Kiln writes (issue 19).

Writes one file of every format with saving_save_driver, makes mutants of them (one-byte
flips, multi-byte flips, truncations, and hostile values in the header fields each format
trusts most), and loads each mutant in its own process with a time limit. Counts mutants,
loads, loads of altered values (other weights, or for a model its compile arguments or
optimizer state missing or changed), clean errors (a kiln::Error naming the file), other
exceptions, crashes and hangs. Exits 1 if any load crashed, hung or threw something other than
a kiln::Error, or if a damaged (not forged) file of a format that checksums all it holds (all
but a bare .safetensors, whose tensor data has no checksum) loaded altered values (issue 33).

    corruption_campaign.py <saving_save_driver> [--mutants N] [--seed S] [--jobs J] [--only model.h5]

CI (ctest) runs a bounded count; docs/errors.md gives a longer run's figures.
"""
import argparse
import concurrent.futures
import json
import os
import random
import shutil
import struct
import subprocess
import sys
import tempfile
import time

TIMEOUT_S = 20  # a load of these small files takes well under a second


def crc32c(data):
    crc = 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 & -(crc & 1))
    return crc ^ 0xFFFFFFFF


# ---- hostile header fields, one generator per format ------------------------------------

HOSTILE_U64 = [0, 1, 7, 8, 4095, 4096, 1 << 31, 1 << 32, 1 << 40, (1 << 63) - 1, (1 << 64) - 1]


def hostile_h5(data, rng):
    """A hostile field of a global heap collection, which no HDF5 checksum covers."""
    at = data.find(b"GCOL")
    if at < 0:
        return None
    size = struct.unpack_from("<Q", data, at + 8)[0]
    objects = []  # (header offset, index, size)
    p = at + 16
    while p + 16 <= at + size:
        idx, osize = struct.unpack_from("<H", data, p)[0], struct.unpack_from("<Q", data, p + 8)[0]
        objects.append(p)
        p += osize if idx == 0 else 16 + ((osize + 7) & ~7)
        if osize == 0 and idx == 0:
            break
    out = bytearray(data)
    choice = rng.randrange(3)
    if choice == 0 or not objects:
        struct.pack_into("<Q", out, at + 8, rng.choice(HOSTILE_U64 + [size - 8, size + 8]))
    elif choice == 1:
        struct.pack_into("<H", out, rng.choice(objects), rng.choice([0, 1, 2, 3, 9, 0xFFFF]))
    else:
        o = rng.choice(objects)
        osize = struct.unpack_from("<Q", data, o + 8)[0]
        struct.pack_into("<Q", out, o + 8, rng.choice(HOSTILE_U64 + [osize + 1, osize - 1, osize + 8]))
    return bytes(out)


def hostile_safetensors(data, rng):
    n = struct.unpack_from("<Q", data)[0]
    if rng.randrange(2) == 0:
        return struct.pack("<Q", rng.choice(HOSTILE_U64 + [n - 1, n + 1, len(data)])) + data[8:]
    header = json.loads(data[8 : 8 + n])
    name = rng.choice([k for k in header if k != "__metadata__"])
    field = rng.choice(["shape", "dtype", "data_offsets"])
    header[name][field] = {
        "shape": rng.choice([[1 << 40], [-1], [0], [3, 1 << 62], []]),
        "dtype": rng.choice(["F64", "I8", "BOOL", "X9", ""]),
        "data_offsets": rng.choice([[0, 1 << 62], [8, 4], [-8, 0], [0, 0]]),
    }[field]
    text = json.dumps(header).encode()
    return struct.pack("<Q", len(text)) + text + data[8 + n :]


def hostile_checkpoint(data, rng):
    """A hostile header field or tensor rank/dimension, with the CRCs fixed up half the time."""
    out = bytearray(data)
    if rng.randrange(2) == 0:
        offset, fmt = rng.choice([(8, "<I"), (12, "<I"), (16, "<Q")])  # version, flags, payload size
        value = rng.choice([1, 2, 1 << 31, (1 << 32) - 1, len(data), 1 << 40])
        struct.pack_into(fmt, out, offset, value & (0xFFFFFFFF if fmt == "<I" else (1 << 64) - 1))
    else:
        # u32 at a random payload offset: lands on counts, sizes, ranks and dims.
        at = 32 + rng.randrange(max(1, len(data) - 36))
        struct.pack_into("<I", out, at, rng.choice([0, 64, 65, 1 << 31, 0xFFFFFFFF]))
    if rng.randrange(2) == 0:
        struct.pack_into("<I", out, 24, crc32c(out[32:]))
        struct.pack_into("<I", out, 28, crc32c(out[:28]))
    return bytes(out)


def hostile_model_json(data, rng):
    toc = json.loads(data)
    key, value = rng.choice([
        ("version", 99), ("version", "2"), ("data_dir", "/etc"), ("data_dir", ".."), ("data_dir", None),
        ("weights", {"file": "../../etc/passwd", "crc32c": 1}), ("weights", {"file": "weights.safetensors"}),
        ("weights", {"file": "weights.safetensors", "crc32c": -1}), ("optimizer", []), ("model_config", {}),
        ("model_config", {"class_name": "Sequential", "config": {"layers": [{"class_name": "Nope"}]}}),
        ("training_config", {"optimizer_config": {"class_name": "Adam", "config": {"learning_rate": "x"}}}),
    ])
    toc[key] = value
    return json.dumps(toc).encode()


def hostile_keras(data, rng):
    """A well-formed .keras archive whose config.json holds a hostile value."""
    import io
    import zipfile
    zin = zipfile.ZipFile(io.BytesIO(data))
    config = json.loads(zin.read("config.json"))
    layers = config["config"]["layers"]
    where, key, value = rng.choice([
        (config, "class_name", 7), (config, "config", []), (config["config"], "layers", {"a": 1}),
        (config, "compile_config", {"optimizer": 3, "loss": None}),
        (config, "compile_config", {"optimizer": {"class_name": "Adam", "config": {"learning_rate": "x"}}, "loss": "mse"}),
        (layers[-1], "class_name", None), (layers[-1], "config", "x"), (layers[-1]["config"], "units", -5),
        (layers[-1]["config"], "units", 1.5), (layers[-1]["config"], "activation", {"config": 4}),
        (layers[-1]["config"], "dtype", {"config": []}), (layers[0]["config"], "batch_shape", [None, "x"]),
        (layers[0]["config"], "batch_shape", None), (layers[-1]["config"], "kernel_initializer", {"class_name": 5}),
    ])
    where[key] = value
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as zout:
        for name in zin.namelist():
            zout.writestr(name, json.dumps(config) if name == "config.json" else zin.read(name))
    return out.getvalue()


HOSTILE = {"model.keras": hostile_keras, "model.h5": hostile_h5, "weights.h5": hostile_h5, "weights.safetensors": hostile_safetensors,
           "ckpt.kckpt": hostile_checkpoint, "model.json": hostile_model_json}


def mutate(data, name, rng):
    kind = rng.choice(["flip1", "flip1", "flips", "truncate", "hostile"])
    if kind == "hostile" and name in HOSTILE:
        hostile = HOSTILE[name](data, rng)
        if hostile is not None:
            return kind, hostile
        kind = "flip1"
    out = bytearray(data)
    if kind == "truncate":
        return kind, bytes(out[: rng.randrange(len(out))])
    for _ in range(1 if kind in ("flip1", "hostile") else rng.randint(2, 8)):
        out[rng.randrange(len(out))] ^= rng.randint(1, 255)
    return "flip1" if kind == "hostile" else kind, bytes(out)


# ---- running the loads --------------------------------------------------------------------

def targets(valid):
    """(format, what to load, file to mutate) for each file Kiln writes."""
    with open(os.path.join(valid, "model_dir", "model.json")) as f:
        data_dir = json.load(f).get("data_dir", ".")  # "." in the directories of earlier Kilns
    out = [("h5", "model.h5", "model.h5"), ("keras", "model.keras", "model.keras"),
           ("h5weights", "weights.h5", "weights.h5"),
           ("safetensors", "weights.safetensors", "weights.safetensors"), ("checkpoint", "ckpt.kckpt", "ckpt.kckpt")]
    for f in ("model.json", f"{data_dir}/weights.safetensors", f"{data_dir}/optimizer.safetensors"):
        out.append(("directory", "model_dir", f"model_dir/{f}"))
    return out


# Formats in which every byte is covered by a checksum or a strict parse: a mutant loads
# exactly what was saved or fails.
CHECKSUMMED = {"h5", "keras", "h5weights", "checkpoint", "directory"}


def run_one(driver, valid, work, format_, load, target, kind, data):
    """Writes the mutant into a copy of the valid files and loads it; returns the outcome."""
    shutil.rmtree(work, ignore_errors=True)
    root = load.split("/")[0]
    src = os.path.join(valid, root)
    if os.path.isdir(src):
        shutil.copytree(src, os.path.join(work, root))
    else:
        os.makedirs(work)
    with open(os.path.join(work, target), "wb") as f:
        f.write(data)
    try:
        p = subprocess.run([driver, "load", format_, os.path.join(work, load)], capture_output=True,
                           timeout=TIMEOUT_S, text=True, errors="replace")
    except subprocess.TimeoutExpired:
        return "hang", ""
    if p.returncode < 0:
        return "crash", f"signal {-p.returncode}"
    return {0: "loaded", 5: "loaded altered values", 3: "clean error", 4: "clean error"}.get(
        p.returncode, "other exception"), p.stdout.strip()[:300]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("driver")
    ap.add_argument("--mutants", type=int, default=400, help="mutants in all, spread over the files")
    ap.add_argument("--seed", type=int, default=19)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--only", default="", help="only files whose path contains this (e.g. model.h5)")
    args = ap.parse_args()

    base = tempfile.mkdtemp(prefix="kiln_campaign_")
    try:
        valid = os.path.join(base, "valid")
        subprocess.run([args.driver, "write", valid], check=True)
        rng = random.Random(args.seed)
        files = [t for t in targets(valid) if args.only in t[2]]
        jobs = []
        for i in range(args.mutants):
            format_, load, target = files[i % len(files)]
            with open(os.path.join(valid, target), "rb") as f:
                kind, data = mutate(f.read(), os.path.basename(target), rng)
            jobs.append((format_, load, target, kind, data))
        counts, failures = {}, []
        start = time.time()
        with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
            futures = [pool.submit(run_one, args.driver, valid, os.path.join(base, f"m{i}"), *job)
                       for i, job in enumerate(jobs)]
            for job, future in zip(jobs, futures):
                outcome, detail = future.result()
                key = (job[2].split("/")[-1] if job[0] != "directory" else "dir/" + job[2].split("/")[-1])
                counts.setdefault(key, {}).setdefault(outcome, 0)
                counts[key][outcome] += 1
                # Hostile mutants may forge checksums (a checkpoint's CRCs, a .keras member's):
                # a forged file is well formed, so only damage must never load altered.
                if outcome in ("crash", "hang", "other exception") or (
                        outcome == "loaded altered values" and job[0] in CHECKSUMMED and job[3] != "hostile"):
                    failures.append(f"{job[2]} ({job[3]}): {outcome} {detail}")
        outcomes = ["loaded", "loaded altered values", "clean error", "other exception", "crash", "hang"]
        print(f"corruption campaign: {args.mutants} mutants, seed {args.seed}, {time.time() - start:.0f} s")
        print("| file | mutants | " + " | ".join(outcomes) + " |")
        print("| --- " * (len(outcomes) + 2) + "|")
        totals = {o: 0 for o in outcomes}
        for key in sorted(counts):
            row = counts[key]
            for o in outcomes:
                totals[o] += row.get(o, 0)
            print(f"| {key} | {sum(row.values())} | " + " | ".join(str(row.get(o, 0)) for o in outcomes) + " |")
        print(f"| all | {args.mutants} | " + " | ".join(str(totals[o]) for o in outcomes) + " |")
        for f in failures:
            print("FAILED:", f)
        return 1 if failures else 0
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
