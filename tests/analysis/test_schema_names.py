#!/usr/bin/python3
"""The archive names the Python tools read are the C++ schema's and exist in what the program
writes (a pytest function, one CTest test: tests/conftest.py says how to run it by hand; Debian's
/usr/bin/python3, which has h5py). The schema comes from the simmer_schema_names executable
(tests/analysis/schema_names.cpp), whose path is in the environment variable SIMMER_SCHEMA_NAMES.

tests: schema_names
jobs/study/study.py (with study_common.py, study_selection.py, study_mixing.py) and the figure
scripts of analysis/ read /metrics attributes by names they
build themselves ("baseline_test_{metric}_mean", f"{pre}test_nll", "trajectories_{v}", ...),
often with a default when the name is missing, so a renamed or dropped metric would make them
print NaN rather than fail. This test collects every such name from their source (string
literals that begin with a metric prefix), expands the placeholders with the values those tools
give them, and requires each
- among the names the C++ schema declares (SIMMER_SCHEMA_NAMES, tests/analysis/schema_names.cpp,
  prints run/metrics.hpp's metric_keys, the verdicts, per-chain datasets and statuses), for the
  task the name's metric belongs to; study.py's VERDICTS must be the schema's, in its order, and
  the trace/, sample_stats/, posterior/ and initial/ datasets the tools read must be declared;
- in the /metrics of a small classification retrofit (Iris, metric accuracy) or regression
  retrofit (sine, metric r2), whichever the name's metric belongs to, as must the datasets the
  tools read; and each archive's /metrics attributes must be exactly the schema's metric_keys
  (the validation set's aside: these runs have none), its status one of the schema's.
A name changed on one side only fails here: in the Python tools (not in the schema), in
run/metrics.hpp (the tools' names no longer in it), or in the writer alone (the archives' names
no longer the schema's).
"""
import ast
import itertools
import os
import re
import subprocess
import sys

import h5py
import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import simmer_test as st  # noqa: E402

SIMMER = os.path.abspath(st.SIMMER_MPI) if st.SIMMER_MPI else ""
ROOT = os.path.abspath(st.ROOT) if st.ROOT else ""
PREFIX = r"(?:\{pre\}|baseline_|ensemble_|deep_ensemble_|trajectories_)"
NAME = r"""f?["'](""" + PREFIX + r"""[A-Za-z0-9_{}]*)["']"""
# A /metrics read: study.py's attribute dicts (m, d, attrs(path)) indexed or .get, the figure
# scripts' ar.attr / ar.require_attr, and the names of their `ar.attr(k, "metrics") for k in (...)`.
READ = re.compile(r"""(?:\b[md]|attrs\([^()]*\))(?:\.get\(|\[)\s*""" + NAME + "|" + r"""\bar\.(?:require_)?attr\(\s*""" + NAME)
TUPLE = re.compile(r"""attr\(k, "metrics"\) for k in \(([^)]*)\)""")
LITERAL = re.compile(NAME)
# Datasets the tools read: literal paths, and f"trace/{k}" ... for k in (...).
DATASET = re.compile(r"""["']/?((?:trace|sample_stats|posterior|initial|diagnostics)/[A-Za-z0-9_]+)["']""")
FIELDS = re.compile(r"""f["']/?(trace|sample_stats|diagnostics)/\{k\}["'].{0,200}?for k in \(([^)]*)\)""", re.S)
# What the tools put in the placeholders (study.py: VERDICTS as {v}, pre, metric; the figures: metric).
PLACEHOLDERS = {"metric": ["accuracy", "r2"], "pre": ["ensemble_", "deep_ensemble_"], "split": ["train", "test"]}


@pytest.fixture
def schema_names():
    """The simmer_schema_names executable (SIMMER_SCHEMA_NAMES, as CTest passes it)."""
    value = os.environ.get("SIMMER_SCHEMA_NAMES")
    if not value:
        pytest.fail("SIMMER_SCHEMA_NAMES is not set: the path of the simmer_schema_names executable "
                    "(build/tests/simmer_schema_names)")
    return os.path.abspath(value)


# study.py and the modules its code moved to (study_common.py: VERDICTS and the archive helpers,
# study_selection.py: issue 17's selection tables), study_mixing.py, long_window.py.
STUDY = ["study.py", "study_common.py", "study_selection.py", "study_mixing.py", "long_window.py"]


def sources():
    """The study scripts (STUDY) and every script of analysis/."""
    return [os.path.join(ROOT, "jobs/study", n) for n in STUDY] + sorted(
        os.path.join(ROOT, "analysis", n) for n in os.listdir(os.path.join(ROOT, "analysis")) if n.endswith(".py"))


def templates(text):
    """Every metric name template `text` reads."""
    for m in READ.finditer(text):
        yield m.group(1) or m.group(2)
    for t in TUPLE.finditer(text):
        for m in LITERAL.finditer(t.group(1)):
            yield m.group(1)


def read_schema(program):
    """The C++ schema's names: {"metric": {task: set}, "verdict": [...], "dataset": set, "status": set}."""
    schema = {"metric": {"classification": set(), "regression": set()}, "verdict": [], "dataset": set(),
              "status": set()}
    for line in subprocess.run([program], capture_output=True, text=True, check=True).stdout.splitlines():
        kind, rest = line.split(" ", 1)
        if kind == "metric":
            task, name = rest.split(" ", 1)
            schema["metric"][task].add(name)
        elif kind == "verdict":
            schema["verdict"].append(rest)
        else:
            schema[kind].add(rest)
    if min(len(v) for v in schema["metric"].values()) < 20 or not schema["verdict"] or not schema["status"]:
        st.fail(f"{program} printed too little of the schema: {schema}")
    return schema


def study_verdicts():
    """study.py's VERDICTS, read from the source that defines it (study.py or study_common.py,
    which study.py imports it from; scripts, not imported here)."""
    for name in ("study.py", "study_common.py"):
        tree = ast.parse(open(os.path.join(ROOT, "jobs/study", name)).read())
        for node in tree.body:
            if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "VERDICTS" for t in node.targets):
                return ast.literal_eval(node.value)
    st.fail("neither jobs/study/study.py nor jobs/study/study_common.py defines VERDICTS any more")


def metric_names(paths, verdicts):
    """{name: set of the files reading it}: every template expanded with what the tools put in
    its placeholders (PLACEHOLDERS, and study.py's VERDICTS as {v})."""
    placeholders = dict(PLACEHOLDERS, v=verdicts)
    names = {}
    for path in paths:
        text = open(path).read()
        for template in templates(text):
            fields = re.findall(r"\{(\w+)\}", template)
            unknown = [f for f in fields if f not in placeholders]
            if unknown:
                st.fail(f"{os.path.relpath(path, ROOT)}: '{template}' has placeholders {unknown} this test does not "
                        "know: add their values to PLACEHOLDERS")
            for values in itertools.product(*(placeholders[f] for f in fields)):
                name = template
                for f, v in zip(fields, values):
                    name = name.replace("{" + f + "}", v, 1)
                names.setdefault(name, set()).add(os.path.relpath(path, ROOT))
    if len(names) < 10:
        st.fail(f"only {len(names)} metric names found in {paths}: the pattern no longer matches the tools' code")
    return names


def kinds_of(name):
    """The tasks whose /metrics a name belongs to, by its metric."""
    return (["classification"] if "accuracy" in name else ["regression"] if re.search(r"r2|mse|rmse", name)
            else ["classification", "regression"])


def dataset_names(paths):
    """{dataset: set of the files reading it}."""
    datasets = {}
    for path in paths:
        text = open(path).read()
        found = [m.group(1) for m in DATASET.finditer(text)]
        for m in FIELDS.finditer(text):
            found += [m.group(1) + "/" + k for k in re.findall(r"""["'](\w+)["']""", m.group(2))]
        for d in found:
            datasets.setdefault("/" + d, set()).add(os.path.relpath(path, ROOT))
    if not any(d.startswith("/trace/") for d in datasets):
        st.fail(f"no trace dataset found in {paths}: the pattern no longer matches the tools' code")
    return datasets


def check_declared_metrics(schema, names):
    """The tools' metric names are among the schema's, for their task."""
    undeclared = [f"{name} (read by {', '.join(sorted(where))})" for name, where in sorted(names.items())
                  if not any(name in schema["metric"][k] for k in kinds_of(name))]
    if undeclared:
        st.fail(f"{len(undeclared)} of {len(names)} metric names the Python tools read are not in the C++ schema "
                "(include/simmer/run/metrics.hpp, as tests/analysis/schema_names prints it):\n  "
                + "\n  ".join(undeclared))


def check_declared_datasets(schema, datasets):
    """The datasets the tools read (other than /diagnostics/) are among the schema's."""
    undeclared = [f"{d} (read by {', '.join(sorted(w))})" for d, w in sorted(datasets.items())
                  if not d.startswith("/diagnostics/") and d not in schema["dataset"]]
    if undeclared:
        st.fail("datasets the Python tools read are not in the C++ schema (run/archive_layout.hpp):\n  "
                + "\n  ".join(undeclared))


def check_written(tmp, schema, names, datasets):
    """A small Iris and a small sine retrofit: the datasets and metric names the tools read are in
    them, their /metrics exactly the schema's metric_keys, their status one of the schema's."""
    small = ["--adam.epochs", "40", "--simmer.steps", "200", "--simmer.every", "50", "--ensemble.window", "100",
             "--ensemble.store_every", "5", "--run.trajectories", "2", "--run.gather_interval", "100"]
    iris, sine = os.path.join(tmp, "iris.h5"), os.path.join(tmp, "sine.h5")
    st.run(SIMMER, 2, ["--config", os.path.join(ROOT, "jobs/iris_retrofit.ini"),
                       "--data.path", os.path.join(ROOT, "data/iris.csv"), "--output", iris] + small)
    st.run(SIMMER, 2, ["--config", os.path.join(ROOT, "jobs/sine_retrofit.ini"), "--output", sine] + small)
    with h5py.File(iris, "r") as f, h5py.File(sine, "r") as g:
        have = {"classification": set(f["metrics"].attrs), "regression": set(g["metrics"].attrs)}
        statuses = {str(h.attrs["status"], "utf-8") if isinstance(h.attrs["status"], bytes) else h.attrs["status"]
                    for h in (f, g)}
        absent = [d for d in sorted(datasets) if d.lstrip("/") not in f or d.lstrip("/") not in g]
    if absent:
        st.fail(f"datasets the Python tools read are not in the archives: {absent}")
    if not statuses <= schema["status"]:
        st.fail(f"archive statuses {statuses} are not among the C++ schema's {sorted(schema['status'])}")
    for task, written in have.items():
        declared = {n for n in schema["metric"][task] if "validation" not in n}
        if written != declared:
            st.fail(f"the {task} run's /metrics is not the C++ schema's metric_keys (run/metrics.hpp): written only: "
                    f"{sorted(written - declared)}; declared only: {sorted(declared - written)}")
    missing = []
    for name, where in sorted(names.items()):
        kinds = kinds_of(name)
        if not any(name in have[k] for k in kinds):
            missing.append(f"{name} (read by {', '.join(sorted(where))}; looked for in the {' or '.join(kinds)} run)")
    if missing:
        st.fail(f"{len(missing)} of {len(names)} metric names the Python tools read are not in the archives' "
                "/metrics:\n  " + "\n  ".join(missing))


def test_schema_names(tmp, schema_names):
    schema = read_schema(schema_names)
    verdicts = study_verdicts()
    if list(verdicts) != schema["verdict"]:
        st.fail(f"jobs/study/study.py VERDICTS {verdicts} differ from the C++ schema's verdicts {schema['verdict']} "
                "(ensemble::kVerdictNames, run::layout::verdict_count_key)")
    paths = sources()
    names = metric_names(paths, verdicts)
    check_declared_metrics(schema, names)
    datasets = dataset_names(paths)
    check_declared_datasets(schema, datasets)
    check_written(tmp, schema, names, datasets)
    print(f"schema names: all {len(names)} /metrics names and {len(datasets)} datasets read by study.py and "
          "analysis/ are the C++ schema's and exist in the archives, whose /metrics are exactly the schema's: "
          + ", ".join(sorted(names)))
