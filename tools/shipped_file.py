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
  shipped_file.py count FILE N[,N...] DTYPE[,DTYPE] [ACT[,ACT]]
                                                   "RECORDS OUTPUTS": FILE's records of those sizes
                                                   and dtypes ("all" for any; of those activations
                                                   alone where given), not from / from the saved
                                                   output
  shipped_file.py texts ACT[,ACT]                  the activation texts of a list, one a line

An activation list is split at the commas outside parentheses, as kplay splits --act: the text
'gelu(approximate=tanh, accuracy=torch)' is one activation.

FILE is edited line by line, as `kplay db export --ship` writes it (one record per line), so that
only the provenance of a record changes and the rest stays byte for byte."""
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


def keep_provenance(old_path, path):
    old = {key(r): r["provenance"] for r in json.load(open(old_path))["tunings"] if "provenance" in r}
    lines, kept = open(path).read().split("\n"), 0
    for i, line in enumerate(lines):
        r = json.loads(line.rstrip(",")) if line.startswith('{"') else {}
        p = old.get(key(r)) if "spec" in r else None  # tuning records have a spec, devices not
        if p is not None:
            text = json.dumps(p, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
            lines[i], kept = re.sub(r'"provenance":\{[^{}]*\}', lambda m: '"provenance":' + text, line), kept + 1
    with open(path, "w") as f:
        f.write("\n".join(lines))
    print("ship_defaults.sh: %d records keep their provenance from %s" % (kept, old_path))


def count(path, sizes, dtypes, activations=None):
    names = texts_of(activations) if activations else None
    types = None if "all" in dtypes.split(",") else set(dtypes.split(","))
    rs = [r for r in json.load(open(path))["tunings"]
          if r["n"] in sizes_of(sizes) and (names is None or r["spec"]["activation"] in names)
          and (types is None or r["spec"]["dtype"] in types)]
    outputs = sum(1 for r in rs if r["spec"].get("saved") == "output")
    print(len(rs) - outputs, outputs)


COMMANDS = {"drop-sizes": (drop_sizes, (3, 4, 5)), "keep-provenance": (keep_provenance, (2,)), "count": (count, (3, 4)),
            "texts": (texts, (1,))}

if __name__ == "__main__":
    if len(sys.argv) < 2 or sys.argv[1] not in COMMANDS or len(sys.argv) - 2 not in COMMANDS[sys.argv[1]][1]:
        sys.exit(__doc__)
    COMMANDS[sys.argv[1]][0](*sys.argv[2:])
