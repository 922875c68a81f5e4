#!/usr/bin/python3
"""Renders every chat template of a directory with Python's jinja2
(../shared/tools/render_chat_template.py) and with `tessera template`, one
case at a time, and prints each template's verdict per case:
  .  the same text, or the same refusal ({"error": ...})
  E  both stopped with an exception that is not a TemplateError
  X  they differ (the first difference is printed)

usage: tools/compare_chat_templates.py DIR CASES.json [--tessera build/bin/tessera]
Exit status 1 when any case differs. Used to check the interpreter on
templates beyond the shared ones (docs/chat_templates.md).
"""
import argparse, glob, json, os, subprocess, sys, tempfile

here = os.path.dirname(os.path.abspath(__file__))
ap = argparse.ArgumentParser()
ap.add_argument("dir")
ap.add_argument("cases")
ap.add_argument("--tessera", default=os.path.join(here, "..", "build", "bin", "tessera"))
ap.add_argument("--renderer", default=os.path.join(here, "..", "..", "shared", "tools", "render_chat_template.py"))
a = ap.parse_args()

cases = json.load(open(a.cases, encoding="utf-8"))
tmp = tempfile.mkdtemp(prefix="compare-templates-")
files = []
for i, c in enumerate(cases):
    path = os.path.join(tmp, f"case{i}.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump([c], f, ensure_ascii=False)
    files.append(path)


def outcome(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        return ("stopped", r.stderr.strip().splitlines()[-1] if r.stderr.strip() else "")
    return ("printed", r.stdout)


differ = 0
for t in sorted(glob.glob(os.path.join(a.dir, "*.jinja"))):
    name = os.path.basename(t)
    marks = []
    for i, f in enumerate(files):
        want = outcome(["/usr/bin/python3", a.renderer, t, f])
        got = outcome([a.tessera, "template", t, "--cases", f])
        if want[0] == got[0] == "stopped":
            marks.append("E")
        elif want == got:
            marks.append(".")
        else:
            marks.append("X")
            differ += 1
            x, y = want[1], got[1]
            k = 0
            while k < min(len(x), len(y)) and x[k] == y[k]:
                k += 1
            print(f"{name} case {i}:\n  python  ({want[0]}): {x[max(0, k - 60):k + 100]!r}\n  tessera ({got[0]}): {y[max(0, k - 60):k + 100]!r}")
    print(name, "".join(marks), flush=True)
print(f"{differ} case(s) differ", file=sys.stderr)
sys.exit(1 if differ else 0)
