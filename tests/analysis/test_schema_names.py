#!/usr/bin/python3
"""The archive names the Python tools read exist in what the program writes (run by CTest with
Debian's /usr/bin/python3, which has h5py).

usage: test_schema_names.py SIMMER_MPI PROJECT_ROOT

jobs/study/study.py and the figure scripts of analysis/ read /metrics attributes by names they
build themselves ("baseline_test_{metric}_mean", f"{pre}test_nll", "trajectories_{v}", ...),
often with a default when the name is missing, so a renamed or dropped metric would make them
print NaN rather than fail. This test collects every such name from their source (string
literals that begin with a metric prefix), expands the placeholders with the values those tools
give them, and requires each in the /metrics of a small classification retrofit (Iris, metric
accuracy) or regression retrofit (sine, metric r2), whichever the name's metric belongs to.
"""
import itertools
import os
import re
import sys
import tempfile

import h5py

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import simmer_test as st  # noqa: E402

SIMMER, ROOT = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
SOURCES = [os.path.join(ROOT, "jobs/study/study.py")] + sorted(
    os.path.join(ROOT, "analysis", n) for n in os.listdir(os.path.join(ROOT, "analysis")) if n.endswith(".py"))
PREFIX = r"(?:\{pre\}|baseline_|ensemble_|deep_ensemble_|trajectories_)"
NAME = r"""f?["'](""" + PREFIX + r"""[A-Za-z0-9_{}]*)["']"""
# A /metrics read: study.py's attribute dicts (m, d, attrs(path)) indexed or .get, the figure
# scripts' ar.attr / ar.require_attr, and the names of their `ar.attr(k, "metrics") for k in (...)`.
READ = re.compile(r"""(?:\b[md]|attrs\([^()]*\))(?:\.get\(|\[)\s*""" + NAME + "|" + r"""\bar\.(?:require_)?attr\(\s*""" + NAME)
TUPLE = re.compile(r"""attr\(k, "metrics"\) for k in \(([^)]*)\)""")
LITERAL = re.compile(NAME)


def templates(text):
    """Every metric name template `text` reads."""
    for m in READ.finditer(text):
        yield m.group(1) or m.group(2)
    for t in TUPLE.finditer(text):
        for m in LITERAL.finditer(t.group(1)):
            yield m.group(1)

# What the tools put in the placeholders (study.py: VERDICTS, pre, metric; the figures: metric).
VERDICTS = ["stationary", "not_mixed", "drifting", "diverged", "no_members"]
PLACEHOLDERS = {"metric": ["accuracy", "r2"], "v": VERDICTS, "pre": ["ensemble_", "deep_ensemble_"],
                "split": ["train", "test"]}

names = {}
for path in SOURCES:
    text = open(path).read()
    for template in templates(text):
        fields = re.findall(r"\{(\w+)\}", template)
        unknown = [f for f in fields if f not in PLACEHOLDERS]
        if unknown:
            st.fail(f"{os.path.relpath(path, ROOT)}: '{template}' has placeholders {unknown} this test does not "
                    "know: add their values to PLACEHOLDERS")
        for values in itertools.product(*(PLACEHOLDERS[f] for f in fields)):
            name = template
            for f, v in zip(fields, values):
                name = name.replace("{" + f + "}", v, 1)
            names.setdefault(name, set()).add(os.path.relpath(path, ROOT))
if len(names) < 10:
    st.fail(f"only {len(names)} metric names found in {SOURCES}: the pattern no longer matches the tools' code")

with tempfile.TemporaryDirectory() as tmp:
    small = ["--adam.epochs", "40", "--simmer.steps", "200", "--simmer.every", "50", "--ensemble.window", "100",
             "--ensemble.store_every", "5", "--run.trajectories", "2", "--run.gather_interval", "100"]
    iris, sine = os.path.join(tmp, "iris.h5"), os.path.join(tmp, "sine.h5")
    st.run(SIMMER, 2, ["--config", os.path.join(ROOT, "jobs/iris_retrofit.ini"),
                       "--data.path", os.path.join(ROOT, "data/iris.csv"), "--output", iris] + small)
    st.run(SIMMER, 2, ["--config", os.path.join(ROOT, "jobs/sine_retrofit.ini"), "--output", sine] + small)
    with h5py.File(iris, "r") as f, h5py.File(sine, "r") as g:
        have = {"classification": set(f["metrics"].attrs), "regression": set(g["metrics"].attrs)}
    missing = []
    for name, where in sorted(names.items()):
        kinds = (["classification"] if "accuracy" in name else ["regression"] if re.search(r"r2|mse|rmse", name)
                 else ["classification", "regression"])
        if not any(name in have[k] for k in kinds):
            missing.append(f"{name} (read by {', '.join(sorted(where))}; looked for in the {' or '.join(kinds)} run)")
    if missing:
        st.fail(f"{len(missing)} of {len(names)} metric names the Python tools read are not in the archives' "
                "/metrics:\n  " + "\n  ".join(missing))
    print(f"schema names: all {len(names)} /metrics names read by study.py and analysis/ exist in the archives: "
          + ", ".join(sorted(names)))
