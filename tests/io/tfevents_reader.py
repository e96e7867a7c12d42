#!/usr/bin/python3
"""Reads TensorBoard event files the way TensorBoard does, independently of Kiln's writer.

It parses the TFRecord framing itself (u64 length, masked CRC-32C of the length, data, masked
CRC-32C of the data), checking both CRCs with its own CRC-32C, and decodes each record with
message classes built here from a schema written from TensorBoard's .proto files (event.proto,
summary.proto, histogram.proto, graph.proto, node_def.proto, attr_value.proto), not from Kiln's.
Needs only Debian's python3-protobuf; no TensorFlow or TensorBoard.

  tfevents_reader.py out.json FILE...   writes [{"file": ..., "events": [...]}, ...] as JSON
"""
import json
import struct
import sys

# Proof that neither is needed: importing either now fails.
sys.modules["tensorflow"] = None
sys.modules["tensorboard"] = None

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

# --- CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), bitwise, and TFRecord's mask ---
_TABLE = []
for _i in range(256):
    _c = _i
    for _ in range(8):
        _c = (_c >> 1) ^ 0x82F63B78 if _c & 1 else _c >> 1
    _TABLE.append(_c)


def crc32c(data):
    c = 0xFFFFFFFF
    for b in data:
        c = (c >> 8) ^ _TABLE[(c ^ b) & 0xFF]
    return c ^ 0xFFFFFFFF


def masked(crc):
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


assert crc32c(b"123456789") == 0xE3069283


def records(path):
    with open(path, "rb") as f:
        data = f.read()
    pos = 0
    while pos < len(data):
        if len(data) - pos < 12:
            raise ValueError(f"{path}: truncated header at byte {pos}")
        header = data[pos:pos + 8]
        (length,) = struct.unpack("<Q", header)
        (length_crc,) = struct.unpack("<I", data[pos + 8:pos + 12])
        if masked(crc32c(header)) != length_crc:
            raise ValueError(f"{path}: length CRC mismatch at byte {pos}")
        body = data[pos + 12:pos + 12 + length]
        if len(body) != length or len(data) < pos + 16 + length:
            raise ValueError(f"{path}: truncated record at byte {pos}")
        (data_crc,) = struct.unpack("<I", data[pos + 12 + length:pos + 16 + length])
        if masked(crc32c(body)) != data_crc:
            raise ValueError(f"{path}: data CRC mismatch at byte {pos}")
        yield body
        pos += 16 + length


# --- The schema, from TensorBoard's protos (package tensorboard; field numbers are the format) ---
F = descriptor_pb2.FieldDescriptorProto


def _message(file_proto, name, fields, nested=()):
    m = file_proto.message_type.add() if isinstance(file_proto, descriptor_pb2.FileDescriptorProto) \
        else file_proto.nested_type.add()
    m.name = name
    for n in nested:
        n(m)
    oneofs = {}
    for fname, number, ftype, label, type_name, oneof in fields:
        f = m.field.add()
        f.name, f.number, f.type, f.label = fname, number, ftype, label
        if type_name:
            f.type_name = type_name
        if oneof is not None:
            if oneof not in oneofs:
                oneofs[oneof] = len(m.oneof_decl)
                m.oneof_decl.add().name = oneof
            f.oneof_index = oneofs[oneof]
    return m


OPT, REP = F.LABEL_OPTIONAL, F.LABEL_REPEATED


def _schema():
    fp = descriptor_pb2.FileDescriptorProto(name="tb_reader_schema.proto", package="tensorboard", syntax="proto3")
    _message(fp, "HistogramProto", [
        ("min", 1, F.TYPE_DOUBLE, OPT, None, None), ("max", 2, F.TYPE_DOUBLE, OPT, None, None),
        ("num", 3, F.TYPE_DOUBLE, OPT, None, None), ("sum", 4, F.TYPE_DOUBLE, OPT, None, None),
        ("sum_squares", 5, F.TYPE_DOUBLE, OPT, None, None),
        ("bucket_limit", 6, F.TYPE_DOUBLE, REP, None, None), ("bucket", 7, F.TYPE_DOUBLE, REP, None, None)])
    _message(fp, "SummaryMetadata", [
        ("plugin_data", 1, F.TYPE_MESSAGE, OPT, ".tensorboard.SummaryMetadata.PluginData", None),
        ("display_name", 2, F.TYPE_STRING, OPT, None, None)],
        nested=[lambda m: _message(m, "PluginData", [
            ("plugin_name", 1, F.TYPE_STRING, OPT, None, None), ("content", 2, F.TYPE_BYTES, OPT, None, None)])])
    _message(fp, "Summary", [("value", 1, F.TYPE_MESSAGE, REP, ".tensorboard.Summary.Value", None)],
             nested=[lambda m: _message(m, "Value", [
                 ("tag", 1, F.TYPE_STRING, OPT, None, None),
                 ("metadata", 9, F.TYPE_MESSAGE, OPT, ".tensorboard.SummaryMetadata", None),
                 ("simple_value", 2, F.TYPE_FLOAT, OPT, None, "value"),
                 ("histo", 5, F.TYPE_MESSAGE, OPT, ".tensorboard.HistogramProto", "value")])])
    _message(fp, "Event", [
        ("wall_time", 1, F.TYPE_DOUBLE, OPT, None, None), ("step", 2, F.TYPE_INT64, OPT, None, None),
        ("file_version", 3, F.TYPE_STRING, OPT, None, "what"), ("graph_def", 4, F.TYPE_BYTES, OPT, None, "what"),
        ("summary", 5, F.TYPE_MESSAGE, OPT, ".tensorboard.Summary", "what")])
    _message(fp, "AttrValue", [
        ("s", 2, F.TYPE_BYTES, OPT, None, "value"), ("i", 3, F.TYPE_INT64, OPT, None, "value"),
        ("f", 4, F.TYPE_FLOAT, OPT, None, "value"), ("b", 5, F.TYPE_BOOL, OPT, None, "value")])

    def attr_entry(m):
        e = _message(m, "AttrEntry", [("key", 1, F.TYPE_STRING, OPT, None, None),
                                      ("value", 2, F.TYPE_MESSAGE, OPT, ".tensorboard.AttrValue", None)])
        e.options.map_entry = True
    _message(fp, "NodeDef", [
        ("name", 1, F.TYPE_STRING, OPT, None, None), ("op", 2, F.TYPE_STRING, OPT, None, None),
        ("input", 3, F.TYPE_STRING, REP, None, None), ("device", 4, F.TYPE_STRING, OPT, None, None),
        ("attr", 5, F.TYPE_MESSAGE, REP, ".tensorboard.NodeDef.AttrEntry", None)], nested=[attr_entry])
    _message(fp, "VersionDef", [("producer", 1, F.TYPE_INT32, OPT, None, None)])
    _message(fp, "GraphDef", [("node", 1, F.TYPE_MESSAGE, REP, ".tensorboard.NodeDef", None),
                              ("versions", 4, F.TYPE_MESSAGE, OPT, ".tensorboard.VersionDef", None)])
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fp)

    def cls(name):
        d = pool.FindMessageTypeByName("tensorboard." + name)
        if hasattr(message_factory, "GetMessageClass"):
            return message_factory.GetMessageClass(d)
        return message_factory.MessageFactory(pool).GetPrototype(d)
    return cls("Event"), cls("GraphDef")


Event, GraphDef = _schema()


def decode(path):
    events = []
    for body in records(path):
        e = Event()
        e.ParseFromString(body)
        out = {"wall_time": e.wall_time, "step": e.step}
        what = e.WhichOneof("what")
        if what == "file_version":
            out["file_version"] = e.file_version
        elif what == "graph_def":
            g = GraphDef()
            g.ParseFromString(e.graph_def)
            out["graph"] = [{"name": n.name, "op": n.op, "input": list(n.input),
                             "attr": {k: v.s.decode() for k, v in n.attr.items()}} for n in g.node]
        elif what == "summary":
            values = []
            for v in e.summary.value:
                kind = v.WhichOneof("value")
                item = {"tag": v.tag}
                if kind == "simple_value":
                    item["simple_value"] = v.simple_value
                elif kind == "histo":
                    h = v.histo
                    item["histo"] = {"min": h.min, "max": h.max, "num": h.num, "sum": h.sum,
                                     "sum_squares": h.sum_squares, "bucket_limit": list(h.bucket_limit),
                                     "bucket": list(h.bucket)}
                values.append(item)
            out["summary"] = values
        events.append(out)
    return events


def main():
    result = [{"file": p, "events": decode(p)} for p in sys.argv[2:]]
    with open(sys.argv[1], "w") as f:
        json.dump(result, f)


if __name__ == "__main__":
    main()
