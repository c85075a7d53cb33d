#!/usr/bin/env python3
"""Edits of a shipped tunings file (tunings/<class>.json) that tools/ship_defaults.sh needs around
`kplay db import` and `kplay db export --ship`, which know nothing of them: the kernel database
keeps no provenance, and autotune's resume cannot be told to redo a size.

  shipped_file.py drop-sizes FILE OUT N[,N...] [ACT[,ACT] [DTYPE[,DTYPE]]]
                                                   FILE without its records of those sizes (of
                                                   those activations and dtypes alone where given,
                                                   "all" for any), into OUT
  shipped_file.py keep-provenance OLD FILE         in FILE, a record also in OLD (same spec, size and
                                                   time made) gets OLD's provenance back
  shipped_file.py upgrade FILE                     FILE in the current format (version 2: the
                                                   provenances in a table the records index), each
                                                   record's data and provenance as they were
  shipped_file.py count FILE N[,N...] DTYPE[,DTYPE] [ACT[,ACT]]
                                                   "RECORDS OUTPUTS": FILE's records of those sizes
                                                   and dtypes ("all" for any; of those activations
                                                   alone where given), not from / from the saved
                                                   output
  shipped_file.py texts ACT[,ACT]                  the activation texts of a list, one a line

An activation list is split at the commas outside parentheses, as kplay splits --act: the text
'gelu(approximate=tanh, accuracy=torch)' is one activation.

FILE is edited line by line, as `kplay db export --ship` writes it (one record per line, the
provenances once each, by date and then text), so that only the provenance of a record changes and
the rest stays byte for byte."""
import json
import re
import sys


def texts_of(text):
    out, depth, cur = [], 0, ""
    for ch in text:
        depth += (ch == "(") - (ch == ")")
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += ch
    return [t for t in out + [cur.strip()] if t]


def texts(activations):
    print("\n".join(texts_of(activations)))


def sizes_of(text):
    return {int(v) for v in text.split(",")}


def key(r):
    return json.dumps(r["spec"], sort_keys=True), r["n"], r["created_unix"]


def drop_sizes(path, out, sizes, activations="all", dtypes="all"):
    doc = json.load(open(path))
    names = None if "all" in texts_of(activations) else set(texts_of(activations))
    types = None if "all" in dtypes.split(",") else set(dtypes.split(","))
    kept = [r for r in doc["tunings"]
            if r["n"] not in sizes_of(sizes) or (names is not None and r["spec"]["activation"] not in names)
            or (types is not None and r["spec"]["dtype"] not in types)]
    print("ship_defaults.sh: %d of %d records kept, the rest tuned again" % (len(kept), len(doc["tunings"])))
    doc["tunings"] = kept
    with open(out, "w") as f:
        json.dump(doc, f)


# A record's provenance as the export writes it: an index, or (version 1) an object of strings.
PROVENANCE = re.compile(r'"provenance":(\d+|\{(?:[^{}"]|"(?:[^"\\]|\\.)*")*\})')


def provenances(doc):
    """Each record's provenance as an object, from a file of either version (None where it has none)."""
    table = doc.get("provenances", [])
    return [table[p] if isinstance(p, int) else p for p in (r.get("provenance") for r in doc["tunings"])]


def compact(obj):
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def rewrite(path, chosen):
    """FILE's text in the current format with the records' provenances `chosen`, in its line order."""
    lines = open(path).read().split("\n")
    devices = lines.index('"devices": [')
    tunings = lines.index('"tunings": [')
    end_devices = lines.index("],", devices)
    records = lines[tunings + 1:tunings + 1 + len(chosen)]
    table = sorted({(p["date"], compact(p)) for p in chosen})
    index = {text: i for i, (_, text) in enumerate(table)}
    table = [text for _, text in table]
    out = ["{", '"format": "kplay-tuning",', '"version": 2,'] + lines[devices:end_devices + 1]
    out += ['"provenances": ['] + [t + ("," if i + 1 < len(table) else "") for i, t in enumerate(table)] + ["],"]
    out += ['"tunings": [']
    out += [PROVENANCE.sub('"provenance":%d' % index[compact(p)], line, count=1) for line, p in zip(records, chosen)]
    with open(path, "w") as f:
        f.write("\n".join(out + ["]", "}", ""]))


def keep_provenance(old_path, path):
    old_doc = json.load(open(old_path))
    old = {key(r): p for r, p in zip(old_doc["tunings"], provenances(old_doc)) if p is not None}
    doc = json.load(open(path))
    chosen, kept = provenances(doc), 0
    for i, r in enumerate(doc["tunings"]):
        if key(r) in old:
            chosen[i], kept = old[key(r)], kept + 1
    rewrite(path, chosen)
    print("ship_defaults.sh: %d records keep their provenance from %s" % (kept, old_path))


def upgrade(path):
    rewrite(path, provenances(json.load(open(path))))


def count(path, sizes, dtypes, activations=None):
    names = texts_of(activations) if activations else None
    types = None if "all" in dtypes.split(",") else set(dtypes.split(","))
    rs = [r for r in json.load(open(path))["tunings"]
          if r["n"] in sizes_of(sizes) and (names is None or r["spec"]["activation"] in names)
          and (types is None or r["spec"]["dtype"] in types)]
    outputs = sum(1 for r in rs if r["spec"].get("saved") == "output")
    print(len(rs) - outputs, outputs)


COMMANDS = {"drop-sizes": (drop_sizes, (3, 4, 5)), "keep-provenance": (keep_provenance, (2,)),
            "upgrade": (upgrade, (1,)), "count": (count, (3, 4)),
            "texts": (texts, (1,))}

if __name__ == "__main__":
    if len(sys.argv) < 2 or sys.argv[1] not in COMMANDS or len(sys.argv) - 2 not in COMMANDS[sys.argv[1]][1]:
        sys.exit(__doc__)
    COMMANDS[sys.argv[1]][0](*sys.argv[2:])
