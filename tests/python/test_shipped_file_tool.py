"""tools/shipped_file.py, the edits tools/ship_defaults.sh makes to a shipped tunings file around
`kplay db import` and `kplay db export --ship`, on the committed H200 file."""
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
TOOL = ROOT / "tools" / "shipped_file.py"
SHIPPED = ROOT / "tunings" / "cuda-nvidia-h200-sm_90.json"


def tool(*args):
    return subprocess.run([sys.executable, str(TOOL), *map(str, args)], check=True, capture_output=True, text=True).stdout


def kplay_command():
    """The kplay CLI: $KPLAY_CLI, the README build's, or the one pip installed beside this Python."""
    for command in (os.environ.get("KPLAY_CLI"), ROOT / "build" / "kplay",
                    shutil.which("kplay", path=os.path.dirname(sys.executable))):
        if command and os.access(str(command), os.X_OK):
            return str(command)
    pytest.skip("no kplay command: build it (README) or pip install ., or set KPLAY_CLI")


def test_an_export_of_the_file_with_its_provenance_kept_is_the_file_byte_for_byte(tmp_path):
    # What ship_defaults.sh --resume-from does when no job is left to run: import, export --ship
    # (every record then names the new command), keep-provenance. kplay's writer and this tool lay
    # the file out alike, so a regenerated file differs from the old one where the data does.
    kplay, env = kplay_command(), dict(os.environ, KPLAY_SHIPPED_TUNINGS="off")
    db, out = tmp_path / "t.db", tmp_path / "out"
    out.mkdir()
    subprocess.run([kplay, "db", "import", str(SHIPPED), "--db", str(db)], check=True, capture_output=True, env=env)
    subprocess.run([kplay, "db", "export", "--ship", str(out), "--command", "NEW", "--db", str(db)], check=True,
                   capture_output=True, env=env)
    path = out / SHIPPED.name
    assert {p["command"] for p in json.loads(path.read_text())["provenances"]} == {"NEW"}
    assert "%d records keep" % len(json.loads(SHIPPED.read_text())["tunings"]) in tool("keep-provenance", SHIPPED,
                                                                                       path)
    assert path.read_text() == SHIPPED.read_text()


def test_keep_provenance_leaves_the_new_runs_record_alone(tmp_path):
    original = SHIPPED.read_text()
    lines = original.split("\n")
    first, last = lines.index('"provenances": [') + 1, lines.index('"tunings": [') - 1
    table = lines[first:last]
    # As an export of a resumed run writes the file: every entry names the new run's command, and
    # one record, tuned by that run, was made later, on a day of its own (the table's last entry).
    exported = lines[:first] + [t.replace('{"command":"', '{"command":"NEW ') for t in table]
    exported[-1] += ","
    new_entry = json.loads(table[-1].rstrip(","))
    new_entry.update(command="NEW", date="2099-01-01")
    exported += [json.dumps(new_entry, sort_keys=True, separators=(",", ":")), "],"] + lines[last + 1:]
    retuned = next(i for i, l in enumerate(exported) if l.startswith('{"arch"') and '"spec"' in l)
    record = json.loads(exported[retuned].rstrip(","))
    exported[retuned] = re.sub(r'"provenance":\d+', '"provenance":%d' % len(table),
                               exported[retuned].replace('"created_unix":%d' % record["created_unix"],
                                                         '"created_unix":%d' % (record["created_unix"] + 1)))
    path = tmp_path / "out.json"
    path.write_text("\n".join(exported))
    records = json.loads(original)["tunings"]
    assert "%d records keep" % (len(records) - 1) in tool("keep-provenance", SHIPPED, path)
    edited = path.read_text().split("\n")
    # The old entries and records as they were; the new entry last, named by the new record alone.
    assert edited[:last] == lines[:last - 1] + [lines[last - 1] + ","] and edited[last] == exported[last]
    assert [i for i, (a, b) in enumerate(zip(edited[last + 1:], lines[last:])) if a != b] == [retuned - last - 1]
    assert edited[retuned] == exported[retuned]


def test_drop_sizes_and_count_see_the_same_records(tmp_path):
    records = json.loads(SHIPPED.read_text())["tunings"]
    small = [r for r in records if r["n"] == 1048576]
    outputs = sum(1 for r in small if r["spec"].get("saved") == "output")
    assert tool("count", SHIPPED, "1048576", "all").split() == [str(len(small) - outputs), str(outputs)]
    # one dtype's: what a --dtype f32 run expects against
    f32 = [r for r in small if r["spec"]["dtype"] == "f32"]
    f32_outputs = sum(1 for r in f32 if r["spec"].get("saved") == "output")
    assert f32 and len(f32) < len(small)
    assert tool("count", SHIPPED, "1048576", "f32").split() == [str(len(f32) - f32_outputs), str(f32_outputs)]
    out = tmp_path / "kept.json"
    tool("drop-sizes", SHIPPED, out, "1048576,16777216")
    kept = json.loads(out.read_text())["tunings"]
    assert kept == [r for r in records if r["n"] not in (1048576, 16777216)] and kept
    assert tool("count", out, "1048576", "all").split() == ["0", "0"]


def test_an_activation_list_splits_at_the_commas_outside_parentheses(tmp_path):
    # 'gelu(approximate=tanh, accuracy=torch)' is one text: --retune with it drops its records.
    assert tool("texts", "all,gelu(approximate=tanh, accuracy=torch),threshold(threshold=0.1, value=20)").split(
        "\n")[:3] == ["all", "gelu(approximate=tanh, accuracy=torch)", "threshold(threshold=0.1, value=20)"]
    records = json.loads(SHIPPED.read_text())["tunings"]
    text = "gelu(approximate=tanh, accuracy=torch)"
    assert any(r["spec"]["activation"] == text and r["n"] == 1048576 for r in records)
    out = tmp_path / "kept.json"
    tool("drop-sizes", SHIPPED, out, "1048576", "relu," + text, "f32")
    kept = json.loads(out.read_text())["tunings"]
    assert kept == [r for r in records if not (r["n"] == 1048576 and r["spec"]["dtype"] == "f32"
                                               and r["spec"]["activation"] in ("relu", text))]


def test_drop_sizes_of_some_activations_and_dtypes_keeps_every_other_record(tmp_path):
    # ship_defaults.sh --retune --act elu,celu --dtype f32: only those records are tuned again.
    records = json.loads(SHIPPED.read_text())["tunings"]
    out = tmp_path / "kept.json"
    tool("drop-sizes", SHIPPED, out, "1048576,16777216", "elu,celu", "f32")
    kept = json.loads(out.read_text())["tunings"]
    dropped = [r for r in records if r["n"] in (1048576, 16777216) and r["spec"]["activation"] in ("elu", "celu")
               and r["spec"]["dtype"] == "f32"]
    assert dropped and kept == [r for r in records if r not in dropped]
    tool("drop-sizes", SHIPPED, out, "1048576", "all", "all")
    assert json.loads(out.read_text())["tunings"] == [r for r in records if r["n"] != 1048576]


def test_count_of_one_activation_leaves_the_others_of_its_size_out(tmp_path):
    # 4096x393216 is both an element-wise size and a softmax shape: ship_defaults.sh --rows counts
    # the softmax records alone.
    doc = json.loads(SHIPPED.read_text())
    n = 1610612736
    rows = [dict(r, n=n) for r in doc["tunings"] if r["spec"]["activation"] == "softmax"]
    assert rows and any(r["n"] == n for r in doc["tunings"])
    doc["tunings"] += rows
    path = tmp_path / "both.json"
    path.write_text(json.dumps(doc))
    everything = [r for r in doc["tunings"] if r["n"] == n]
    outputs = sum(1 for r in everything if r["spec"].get("saved") == "output")
    assert tool("count", path, n, "all", "softmax").split() == [str(len(rows)), "0"]
    assert tool("count", path, n, "all").split() == [str(len(everything) - outputs), str(outputs)]
