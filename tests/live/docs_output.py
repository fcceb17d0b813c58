#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Every JSON key and Prometheus metric mmscope prints must be listed in docs/output.md
(tests/live/test_docs_output.sh).

docs/output.md lists the JSON fields as table rows whose first cell is the field's path in
backquotes: dotted keys, "[]" after an array's key (`faults.by_process[].pid`), and <name>
placeholders for keys taken from a list of names. The placeholders are the rows of the table
whose first cell is `<name>`: each backquoted word of its second cell is one name (a name may
hold `<N>`, any number). `<field>` stands for any path (the keys of "unavailable", which are
checked as paths themselves). A row whose type is "histogram" documents its slots too, and
every row documents its parents (`hooks[].event`: `hooks[]`). The metrics are the rows whose first cell is `mmscope_...`,
their type the first word of the second cell, their labels the backquoted words of the third.

Usage:
  docs_output.py DOC json LABEL FILE   each line of FILE is one JSON object
  docs_output.py DOC metrics LABEL FILE   FILE is a scrape in the text format 0.0.4
Prints one "FAIL ..." line per undocumented key, metric or label, and "PASS LABEL (N keys)".
"""
import json
import re
import sys

CELL = re.compile(r"`([^`]+)`")


def load_doc(path):
    fields, metrics, placeholders = [], {}, {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            if not line.startswith("| `"):
                continue
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            first = CELL.findall(cells[0])
            if not first:
                continue
            name = first[0]
            if re.fullmatch(r"<[a-zA-Z]+>", name):
                placeholders[name] = CELL.findall(cells[1]) if len(cells) > 1 else []
            elif name.startswith("mmscope_"):
                kind = cells[1].split()[0] if len(cells) > 1 and cells[1] else ""
                labels = set(CELL.findall(cells[2])) if len(cells) > 2 else set()
                metrics[name] = (kind, labels)
            else:
                fields.append(name)
                # A histogram is an array of slots: {"lo", "hi", "count"} (docs/output.md).
                if len(cells) > 1 and cells[1].startswith("histogram"):
                    fields += [name + "[]" + s for s in ("", ".lo", ".hi", ".count")]
                # Parents are documented by their children: `hooks[].event` gives `hooks[]`.
                for i, c in enumerate(name):
                    if c == "." and not name[:i].endswith("<"):
                        fields.append(name[:i])
    return fields, metrics, placeholders


def name_regex(name):
    return re.escape(name).replace(re.escape("<N>"), "[0-9]+")


def path_regex(path, placeholders):
    out, pos = "", 0
    for m in re.finditer(r"<[a-zA-Z]+>", path):
        out += re.escape(path[pos:m.start()])
        ph = m.group(0)
        if ph == "<N>":
            out += "[0-9]+"
        elif ph == "<field>":
            out += ".+"
        elif ph in placeholders and placeholders[ph]:
            out += "(?:" + "|".join(name_regex(v) for v in placeholders[ph]) + ")"
        else:
            raise SystemExit(f"FAIL docs_output (docs/output.md uses {ph} in `{path}` "
                             "but its placeholder table does not list its names)")
        pos = m.end()
    return re.compile(out + re.escape(path[pos:]))


def walk(obj, prefix, out, unavailable):
    if isinstance(obj, dict):
        for k, v in obj.items():
            p = f"{prefix}.{k}" if prefix else k
            if p == "unavailable" and isinstance(v, dict):
                for field in v:
                    out.add(f"unavailable.{field}")
                    unavailable.add(field)
                continue
            walk(v, p, out, unavailable)
    elif isinstance(obj, list):
        out.add(prefix + "[]")
        for v in obj:
            walk(v, prefix + "[]", out, unavailable)
    else:
        out.add(prefix)


def check_json(doc, label, path):
    fields, _, placeholders = load_doc(doc)
    regexes = [path_regex(f, placeholders) for f in fields]
    keys, unavailable, n = set(), set(), 0
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.strip():
                walk(json.loads(line), "", keys, unavailable)
                n += 1
    if not n:
        print(f"FAIL docs_output {label} (no JSON object in its output)")
        return
    bad = 0
    missing = [k for k in sorted(keys) if not any(r.fullmatch(k) for r in regexes)]
    for k in missing[:12]:
        print(f"FAIL docs_output {label}: key '{k}' is not in docs/output.md "
              f"(add a row `{k}` to the table of its section there)")
    if len(missing) > 12:
        print(f"FAIL docs_output {label}: and {len(missing) - 12} more keys not in "
              f"docs/output.md ({', '.join(missing[12:])})")
    bad += len(missing)
    for k in sorted(unavailable):
        if not any(r.fullmatch(k) or r.fullmatch(k + "[]") for r in regexes):
            print(f"FAIL docs_output {label}: 'unavailable' names the field '{k}', "
                  "which is not in docs/output.md")
            bad += 1
    if not bad:
        print(f"PASS docs_output {label} ({len(keys)} keys in {n} objects, all in docs/output.md)")


SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? ')
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="(?:[^"\\]|\\.)*"')


def check_metrics(doc, label, path):
    _, metrics, _ = load_doc(doc)
    types, seen, bad = {}, {}, 0
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.startswith("# TYPE "):
                _, _, name, kind = line.split()
                types[name] = kind
                continue
            if line.startswith("#") or not line.strip():
                continue
            m = SAMPLE.match(line)
            if not m:
                print(f"FAIL docs_output {label}: cannot parse the sample line '{line.strip()}'")
                bad += 1
                continue
            name = m.group(1)
            fam = re.sub(r"_(bucket|sum|count)$", "", name) if name not in types else name
            seen.setdefault(fam, set()).update(LABEL.findall(m.group(3) or ""))
    if not seen:
        print(f"FAIL docs_output {label} (no samples in the scrape)")
        return
    for fam in sorted(set(seen) | set(types)):
        if fam not in metrics:
            print(f"FAIL docs_output {label}: metric '{fam}' is not in docs/output.md "
                  "(add a row to its table of metrics)")
            bad += 1
            continue
        kind, labels = metrics[fam]
        if fam in types and types[fam] != kind:
            print(f"FAIL docs_output {label}: metric '{fam}' is of type {types[fam]}, "
                  f"docs/output.md says {kind}")
            bad += 1
        extra = seen.get(fam, set()) - labels - ({"le"} if kind == "histogram" else set())
        if extra:
            print(f"FAIL docs_output {label}: metric '{fam}' has the labels "
                  f"{sorted(extra)}, not in its row of docs/output.md")
            bad += 1
    if not bad:
        print(f"PASS docs_output {label} ({len(seen)} metrics, all in docs/output.md)")


if __name__ == "__main__":
    doc, mode, label, path = sys.argv[1:5]
    {"json": check_json, "metrics": check_metrics}[mode](doc, label, path)
