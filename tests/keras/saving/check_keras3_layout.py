#!/usr/bin/python3
"""Checks that .keras files (and .weights.h5 files) Kiln writes have exactly the layout Keras 3's
saving_lib reads: zip members, metadata.json and config.json keys, the weights file's groups,
dataset names, dtypes and attributes. Usage: check_keras3_layout.py FILE.keras|FILE.weights.h5
[...]. Exits 1 with one line per problem. h5py, numpy and zipfile only (no Keras).

What Keras 3 needs, from keras/src/saving (saving_lib.py, serialization_lib.py) and
keras/src/models/functional.py:
- zip members metadata.json, config.json, model.weights.h5, then the assets DiskIOStore writes
  on close: files only (no directory entries), assets/<the layer's weights path>/vocabulary.txt
  of each TextVectorization, StringLookup or IntegerLookup whose config vocabulary is null
  (IndexLookup.save_assets: "\n".join of get_vocabulary(), special tokens first), a
  TextVectorization's again under _lookup_layer/ (its StringLookup, which _walk_saveable
  visits too); no assets/ members for other models;
- config.json: {"module", "class_name", "config", "registered_name"} on every serialized
  object; layer dtypes as DTypePolicy objects, float32 (the lookup layers and TextVectorization
  too: Keras 3 passes them no dtype, unlike tf.keras 2); no Keras 2 "batch_input_shape" in layer
  configs (Keras 3 layers reject it), the input as an InputLayer with "batch_shape" and a dtype
  name (a Sequential's: the keys of a leading lookup layer, "string" for text); Functional nodes as {"args", "kwargs"} of __keras_tensor__ objects
  with a 3-part keras_history and the producer's compute_output_spec dtype (the Input's; int64
  from a lookup layer or TextVectorization in output_mode "int", else float32); optimizer
  configs without Keras 2's "decay" / "is_legacy_optimizer" (Keras 3 rejects unknown kwargs);
- model.weights.h5: layers/<snake_case class>[_<n>]/vars/<i> per model layer (Sequential
  without its InputLayer), the root's vars, and optimizer/vars/<i> for a compiled model; each
  vars group holds only datasets "0".."n-1" (float32 weights; the optimizer's "0" is an int64
  scalar, "1" a float32 scalar unless a schedule drives the learning rate) and a "name" str
  attribute naming its owner. Kiln's extra "<attr>.kiln_ref" attributes (its corruption guard
  for variable-length strings) are the only other attributes allowed. A MultiHeadAttention's
  own vars group is empty; its projections are the groups query_dense, key_dense, value_dense
  and output_dense under it (kernel, then bias unless use_bias is false; names "query", "key",
  "value", "attention_output"), beside empty _dropout_layer and _softmax groups (Keras 3.1+'s
  _walk_saveable); its config has no tf.keras query_shape/value_shape/key_shape, and its
  build_config is {"shapes_dict": {"query_shape", "value_shape"[, "key_shape"]}}. A lookup
  layer's vars group is empty ("idf_weights" in tf_idf); a TextVectorization's group holds
  vars and _lookup_layer/vars (its StringLookup's name), alike.
"""
import io
import json
import re
import sys
import zipfile

import h5py
import numpy as np

problems = []


def check(cond, what):
    if not cond:
        problems.append(what)
    return cond


def snake(name):
    name = re.sub(r"(.)([A-Z][a-z0-9]+)", r"\1_\2", name)
    return re.sub(r"([a-z])([A-Z])", r"\1_\2", name).lower()


def check_object(o, where, layer=False):
    if not check(isinstance(o, dict), f"{where}: not an object"):
        return
    for key in ("module", "class_name", "config", "registered_name"):
        check(key in o, f"{where}: lacks '{key}'")
    check(isinstance(o.get("module"), str) and o["module"].startswith("keras"), f"{where}: module {o.get('module')!r}")
    if not layer:
        return
    c = o.get("config", {})
    check("batch_input_shape" not in c, f"{where}: Keras 2 batch_input_shape in a Keras 3 layer config")
    if o["class_name"] == "InputLayer":
        check(isinstance(c.get("batch_shape"), list) and c["batch_shape"][0] is None, f"{where}: batch_shape")
        check(isinstance(c.get("dtype"), str), f"{where}: InputLayer dtype must be a name")
    else:
        d = c.get("dtype")
        check(isinstance(d, dict) and d.get("class_name") == "DTypePolicy" and d.get("module") == "keras"
              and d.get("config", {}).get("name") == "float32", f"{where}: dtype {d!r} is not a DTypePolicy")
        for k, v in c.items():
            if k.endswith("_initializer") and v is not None:
                check_object(v, f"{where}.{k}")
                check(v.get("module") == "keras.initializers", f"{where}.{k}: module")


HOST_LAYERS = ("TextVectorization", "StringLookup", "IntegerLookup")


def output_dtype(entry):
    """The dtype Keras 3's compute_output_spec gives the layer's output."""
    if entry["class_name"] == "InputLayer":
        return entry["config"]["dtype"]
    if entry["class_name"] in HOST_LAYERS and entry["config"].get("output_mode") == "int":
        return "int64"
    return "float32"


def layer_paths(model_layers):
    """(entry, path under layers/) per model layer: Keras's snake_case class name, _<n> from the
    second of a class on."""
    used = {}
    out = []
    for e in model_layers:
        base = snake(e["class_name"])
        out.append((e, base if base not in used else f"{base}_{used[base] + 1}"))
        used[base] = used.get(base, -1) + 1
    return out


MHA_SUBLAYERS = (("query_dense", "query"), ("key_dense", "key"), ("value_dense", "value"),
                 ("output_dense", "attention_output"))


def check_mha(f, path, e):
    """The sublayer groups of a MultiHeadAttention at layers/<path>; returns its variables'
    datasets in Keras's variable order (query, key, value, output; kernel then bias)."""
    c = e["config"]
    for key in ("query_shape", "value_shape", "key_shape"):
        check(key not in c, f"layer {c.get('name')}: tf.keras's {key} in a Keras 3 MultiHeadAttention config")
    shapes = e.get("build_config", {}).get("shapes_dict", {})
    check({"query_shape", "value_shape"} <= set(shapes) <= {"query_shape", "value_shape", "key_shape"},
          f"layer {c.get('name')}: build_config {e.get('build_config')!r}")
    group = f.get(f"layers/{path}")
    expect = {"vars", "_dropout_layer", "_softmax"} | {attr for attr, _ in MHA_SUBLAYERS}
    if not check(isinstance(group, h5py.Group) and set(group.keys()) == expect,
                 f"layers/{path}: {sorted(group.keys()) if isinstance(group, h5py.Group) else group}, expected {sorted(expect)}"):
        return []
    per = 2 if c.get("use_bias", True) else 1
    out = []
    for attr, name in MHA_SUBLAYERS:
        out += check_vars(group.get(f"{attr}/vars"), f"layers/{path}/{attr}/vars", name, per)
    for attr in ("_dropout_layer", "_softmax"):
        check_vars(group.get(f"{attr}/vars"), f"layers/{path}/{attr}/vars", attr.strip("_").replace("_layer", ""), 0)
    k = out[0].shape if out else None
    check(k is not None and len(k) == 3, f"layers/{path}/query_dense/vars/0: kernel shape {k}")
    return out


def weights_per_layer(entry):
    cls, c = entry["class_name"], entry["config"]
    if cls in ("Dense", "Conv2D"):
        return 2 if c.get("use_bias", True) else 1
    if cls == "BatchNormalization":
        return 2 + int(c.get("center", True)) + int(c.get("scale", True))
    if cls == "LayerNormalization":
        return int(c.get("center", True)) + int(c.get("scale", True))
    if cls == "Embedding":
        return 1
    return 0


def check_config(cfg):
    check_object(cfg, "config.json")
    cls = cfg["class_name"]
    c = cfg["config"]
    layers = c.get("layers", [])
    for i, e in enumerate(layers):
        check_object(e, f"config.json layer {i}", layer=True)
    if cls == "Sequential":
        check(cfg["module"] == "keras" and cfg["registered_name"] is None, "Sequential: module/registered_name")
        check(isinstance(c.get("dtype"), dict), "Sequential: dtype policy")
        model_layers = [e for e in layers if e["class_name"] != "InputLayer"]
        if layers and layers[0]["class_name"] == "InputLayer":
            check(c.get("build_input_shape") == layers[0]["config"]["batch_shape"], "Sequential: build_input_shape")
            if model_layers and model_layers[0]["class_name"] in HOST_LAYERS:
                first = model_layers[0]
                keys = "string" if first["class_name"] == "TextVectorization" or (
                    first["class_name"] == "StringLookup" and not first["config"].get("invert")) else "int64"
                check(layers[0]["config"]["dtype"] == keys,
                      f"Sequential: input dtype {layers[0]['config']['dtype']!r} before {first['class_name']}, expected {keys!r}")
            check(cfg.get("build_config", {}).get("input_shape") == c.get("build_input_shape"), "Sequential: build_config")
    elif cls == "Functional":
        check(cfg["module"] == "keras.src.models.functional" and cfg["registered_name"] == "Functional",
              "Functional: module/registered_name")
        names = {e.get("name") for e in layers}
        dtypes = {e.get("name"): output_dtype(e) for e in layers}
        for e in layers:
            check(e.get("name") == e["config"].get("name"), f"layer {e.get('name')}: name")
            for n in e.get("inbound_nodes", []):
                if not check(isinstance(n, dict) and set(n) == {"args", "kwargs"}, f"layer {e['name']}: node {n!r}"):
                    continue
                tensors = []
                for a in n["args"]:
                    tensors += a if isinstance(a, list) else [a]
                tensors += [v for v in n["kwargs"].values() if isinstance(v, dict)]
                for t in tensors:
                    ok = check(t.get("class_name") == "__keras_tensor__", f"layer {e['name']}: arg {t!r}")
                    h = t.get("config", {}).get("keras_history") if ok else None
                    if ok and check(isinstance(h, list) and len(h) == 3 and h[0] in names,
                                    f"layer {e['name']}: keras_history {h!r}"):
                        check(t["config"]["shape"][0] is None, f"layer {e['name']}: tensor shape {t['config']['shape']}")
                        check(t["config"]["dtype"] == dtypes[h[0]],
                              f"layer {e['name']}: tensor dtype {t['config']['dtype']!r}, {h[0]} gives {dtypes[h[0]]!r}")
            if e["class_name"] == "InputLayer":
                check(e["inbound_nodes"] == [], "InputLayer has inbound nodes")
        for key in ("input_layers", "output_layers"):
            check(isinstance(c.get(key), list), f"Functional: {key}")
        model_layers = layers
    else:
        problems.append(f"config.json: model class {cls}")
        return [], None
    cc = cfg.get("compile_config")
    if cc is not None:
        for key in ("optimizer", "loss", "loss_weights", "metrics", "weighted_metrics", "run_eagerly",
                    "steps_per_execution", "jit_compile"):
            check(key in cc, f"compile_config lacks {key}")
        opt = cc["optimizer"]
        check_object(opt, "compile_config.optimizer")
        check(opt["module"] == "keras.optimizers", "optimizer module")
        for bad in ("decay", "is_legacy_optimizer"):
            check(bad not in opt["config"], f"optimizer config has Keras 2's {bad}")
        for key in ("name", "learning_rate", "weight_decay", "clipnorm", "global_clipnorm", "clipvalue", "use_ema",
                    "ema_momentum", "ema_overwrite_frequency", "loss_scale_factor", "gradient_accumulation_steps"):
            check(key in opt["config"], f"optimizer config lacks {key}")
        if isinstance(cc["loss"], dict):
            check_object(cc["loss"], "compile_config.loss")
    return model_layers, cc


def check_vars(g, where, owner, expected_count):
    if not check(isinstance(g, h5py.Group), f"{where}: not a group"):
        return []
    names = sorted(g.keys(), key=int) if all(k.isdigit() for k in g.keys()) else list(g.keys())
    check(names == [str(i) for i in range(len(names))], f"{where}: members {list(g.keys())}")
    if expected_count is not None:
        check(len(names) == expected_count, f"{where}: {len(names)} variables, expected {expected_count}")
    for a in g.attrs:
        check(a == "name" or a.endswith(".kiln_ref"), f"{where}: unexpected attribute {a}")
    if check("name" in g.attrs, f"{where}: no name attribute"):
        name = g.attrs["name"]
        check(isinstance(name, str), f"{where}: name is {type(name).__name__}, not str (variable-length UTF-8)")
        check(name == owner, f"{where}: name {name!r}, expected {owner!r}")
    return [g[n] for n in names]


def check_host_layer_vars(f, path, e):
    """A lookup layer's (or TextVectorization's and its StringLookup's) vars: none, or
    "idf_weights" in tf_idf."""
    tf_idf = e["config"].get("output_mode") == "tf_idf"
    groups = [(f"layers/{path}/vars", e["config"].get("name"))]
    if e["class_name"] == "TextVectorization":
        g = f.get(f"layers/{path}")
        check(isinstance(g, h5py.Group) and set(g.keys()) == {"vars", "_lookup_layer"},
              f"layers/{path}: {sorted(g.keys()) if isinstance(g, h5py.Group) else g}, expected ['_lookup_layer', 'vars']")
        groups.append((f"layers/{path}/_lookup_layer/vars", None))
    for where, owner in groups:
        g = f.get(where)
        if not check(isinstance(g, h5py.Group), f"{where}: not a group"):
            continue
        check(sorted(g.keys()) == (["idf_weights"] if tf_idf else []), f"{where}: members {list(g.keys())}")
        name = g.attrs.get("name")
        check(isinstance(name, str) and (owner is None or name == owner), f"{where}: name {name!r}, expected {owner!r}")


def check_assets(z, model_layers, names):
    """The assets/ members: each adapted host layer's vocabulary.txt at its weights path."""
    expect = {}
    for e, path in layer_paths(model_layers):
        c = e["config"]
        if e["class_name"] not in HOST_LAYERS or c.get("vocabulary") is not None:
            continue
        expect[f"assets/layers/{path}/vocabulary.txt"] = c
        if e["class_name"] == "TextVectorization":
            expect[f"assets/layers/{path}/_lookup_layer/vocabulary.txt"] = c
    assets = [n for n in names if n.startswith("assets/")]
    check(names[:3] == ["metadata.json", "config.json", "model.weights.h5"] and len(assets) == len(names) - 3,
          f"members {names}")
    check(sorted(assets) == sorted(expect), f"assets {sorted(assets)}, expected {sorted(expect)} (files only)")
    for member, c in expect.items():
        if member not in assets:
            continue
        words = z.read(member).decode("utf-8").split("\n")
        size = c.get("vocabulary_size")
        check(size is None or len(words) == size, f"{member}: {len(words)} lines, vocabulary_size {size}")
    for e, path in layer_paths(model_layers):
        pair = [f"assets/layers/{path}/vocabulary.txt", f"assets/layers/{path}/_lookup_layer/vocabulary.txt"]
        if all(p in assets for p in pair):
            check(z.read(pair[0]) == z.read(pair[1]), f"{pair[1]}: differs from {pair[0]}")


def check_weights(f, model_layers, cc, model_name):
    top = set(f.keys())
    expected_top = {"vars"} | ({"layers"} if model_layers else set()) | ({"optimizer"} if cc is not None else set())
    check(top == expected_top, f"weights: top-level groups {sorted(top)}, expected {sorted(expected_top)}")
    check(len(f.attrs) == 0, f"weights: root attributes {list(f.attrs)}")
    trainable_shapes = []
    paths = layer_paths(model_layers)
    for e, path in paths:
        lname = e["config"].get("name")
        if e["class_name"] in HOST_LAYERS:
            check_host_layer_vars(f, path, e)
            continue
        ds = check_vars(f.get(f"layers/{path}/vars"), f"layers/{path}/vars", lname, weights_per_layer(e))
        if e["class_name"] == "MultiHeadAttention":
            ds = check_mha(f, path, e)
        for d in ds:
            check(d.dtype == np.dtype("<f4"), f"layers/{path}/vars/{d.name}: dtype {d.dtype}")
        n_trainable = len(ds) - (2 if e["class_name"] == "BatchNormalization" else 0)
        trainable_shapes += [d.shape for d in ds[:n_trainable]]
    if "layers" in f:
        expect = {path for _, path in paths}
        check(set(f["layers"].keys()) == expect, f"layers/: {sorted(f['layers'].keys())}, expected {sorted(expect)}")
    check_vars(f.get("vars"), "vars", model_name, 0)
    if cc is not None:
        ds = check_vars(f.get("optimizer/vars"), "optimizer/vars", cc["optimizer"]["config"]["name"], None)
        scheduled = isinstance(cc["optimizer"]["config"]["learning_rate"], dict)
        head = 1 if scheduled else 2
        if check(len(ds) >= head, "optimizer/vars: too few variables"):
            check(ds[0].shape == () and ds[0].dtype == np.dtype("<i8"), "optimizer/vars/0: iterations int64 scalar")
            if not scheduled:
                check(ds[1].shape == () and ds[1].dtype == np.dtype("<f4"), "optimizer/vars/1: learning rate f32 scalar")
            slots = ds[head:]
            if slots:
                per = len(slots) // max(len(trainable_shapes), 1)
                check(len(slots) == per * len(trainable_shapes), "optimizer slots: not a multiple of the variables")
                cls = cc["optimizer"]["class_name"]
                for k, s in enumerate(slots):
                    # Two-slot optimizers interleave per variable; RMSprop goes kind by kind.
                    v = k // per if cls in ("Adam", "AdamW", "Adadelta", "Adamax", "Ftrl") else k % len(trainable_shapes)
                    check(s.shape == trainable_shapes[v] and s.dtype == np.dtype("<f4"), f"optimizer slot {k}: {s.shape}")


def main():
    for path in sys.argv[1:]:
        before = len(problems)
        if path.endswith(".weights.h5"):
            with h5py.File(path, "r") as f:
                check(set(f.keys()) <= {"layers", "vars", "optimizer"}, f"{path}: top-level {sorted(f.keys())}")
                check("vars" in f, f"{path}: no vars group")
        else:
            with zipfile.ZipFile(path) as z:
                names = z.namelist()
                for info in z.infolist():
                    check(info.compress_type == zipfile.ZIP_STORED, f"{path}: {info.filename} is compressed")
                meta = json.loads(z.read("metadata.json"))
                check(set(meta) == {"keras_version", "date_saved"}, f"metadata.json keys {sorted(meta)}")
                check(str(meta.get("keras_version", "")).startswith("3."), "metadata.json keras_version")
                check(re.fullmatch(r"\d{4}-\d\d-\d\d@\d\d:\d\d:\d\d", meta.get("date_saved", "")), "date_saved")
                cfg = json.loads(z.read("config.json"))
                model_layers, cc = check_config(cfg)
                check_assets(z, model_layers, names)
                with h5py.File(io.BytesIO(z.read("model.weights.h5")), "r") as f:
                    check_weights(f, model_layers, cc, cfg["config"]["name"])
        for p in problems[before:]:
            print(f"{path}: {p}")
    if problems:
        sys.exit(1)
    print("check_keras3_layout: Keras 3's layout in", len(sys.argv) - 1, "files")


if __name__ == "__main__":
    main()
