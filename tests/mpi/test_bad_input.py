#!/usr/bin/python3
"""Bad input: every broken data file, configuration value or output path of the issue's list is
refused with one clear message and loses nothing (run by CTest with Debian's /usr/bin/python3).

usage: test_bad_input.py SIMMER_MPI PROJECT_ROOT CASE

Each refusal runs under `mpirun -n 2` with a fresh output path: exit code 2, the message names
the file / key, the line and column where there is one, and the value; it is printed once, by
one rank, with no HDF5 error stack; no archive is created. The first refusal of each case runs a
second time with an existing output and --overwrite: same message, and the existing file is
unchanged byte for byte. The broken files are written into a temporary directory.

cases:
  data_missing          data.path does not exist
  data_unreadable       data.path cannot be read (a directory; also a mode-000 file when not root)
  data_empty            empty file
  data_header_only      a header and no data rows
  data_ragged           a row with fewer / more fields than the header
  data_non_numeric      a non-numeric field in a used column (feature and regression target)
  data_not_finite       inf or -inf in a used column, and NaN when data.missing does not list it
                        (one in an unused column is accepted; by default nan/NaN are missing values)
  data_overflow         a value that passes the finite check but whose scaling to [-1, 1] (or the
                        regression loss) overflows: ±1.7e308 in a feature, 1e200 in the target
  data_constant_target  a regression target constant in the training split
  data_missing_class    a class with rows in the test split but none in the training split (and
                        data.stratify = true accepted instead)
  config_empty          a config file with no keys (empty, only comments, only headers)
  data_drops            rows dropped for missing values: counted per column and token on the
                        console (rank 0, once) and in `simmer_analyze summary`; a class named NA is
                        a class (with a warning) unless data.missing_in_target; data.missing; an
                        extra point (ensemble.points) with a missing value is refused
  data_delimiter        a ';'-separated file: the unknown-column error hints data.delimiter; ';' and
                        tab files read with the key
  data_line_endings     a CR-only (classic Mac) file reads like the LF file: the same /data
  data_all_features     data.features = * with data.exclude; a constant feature is warned about
  data_unknown_column   a feature or target name the header does not have
  data_one_class        classification with one class
  data_too_many_test_rows  data.train + data.test exceed the rows of the file
  architecture_mismatch    input or output width does not match the data
  unknown_name          unknown activation, output activation, loss, init or mode (command
                        line and INI file)
  ini_syntax            an INI value that is not a number / an unknown key (file:line)
  nonpositive           zero or negative time step, steps, window
  window_too_long       ensemble.window > simmer.steps
  T_target_below_initial
  output_dir_missing
  output_dir_not_writable  /proc (not writable even for root, whom permission bits do not stop)
                        and, where this process may mount, a read-only tmpfs
  output_exists         an existing output without --overwrite is refused and kept
  output_is_input       --output naming the run's own data file or INI is refused, with --overwrite
                        too, and the input is left as it was
  output_not_a_file     run.output a directory or a device (/dev/null), also with --overwrite
  absurd_sizes          a trajectory count, step count or ensemble no machine could hold is
                        refused naming the key (no overflowing estimate, no allocation)
  memory                a run whose estimated peak memory on the node exceeds run.memory_limit
                        (or, with auto, 90% of the node's available memory) is refused before any
                        work, naming the estimate, the limit and the keys; off skips the check
  more_ranks_than_trajectories  allowed: idle ranks take part in the collective I/O; the archive
                        equals the -n 1 run's (provenance aside)

In the sanitizer build (SIMMER_TEST_SANITIZED=1, set by tests/CMakeLists.txt) each case runs
only its first refusal: an instrumented mpirun costs ~3 s, and the other refusals of a case take
the same code path (the normal suite runs them all).

A case listed in KNOWN_OPEN fails because of a bug in code this test's author could not change;
it exits 77 (CTest: skipped) with the failure printed, so the suite stays usable until the fix
lands; once it passes the entry must be removed.
"""
import os
import random
import subprocess
import sys
import tempfile

import h5py

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import simmer_test as st  # noqa: E402  (tests/simmer_test.py: ENV, fail, archive comparison, ...)

SIMMER, ROOT, CASE = sys.argv[1], sys.argv[2], sys.argv[3]
ENV = st.ENV
SKIP = 77
SANITIZED = os.environ.get("SIMMER_TEST_SANITIZED") == "1"

# case -> where the bug is; see the module docstring.
KNOWN_OPEN: dict = {}


class Failure(Exception):
    pass


def check(ok, msg):
    if not ok:
        raise Failure(msg)


def run(ranks, args, cwd):
    """simmer_mpi in `cwd`, any exit code: (result, command line)."""
    p = st.run(SIMMER, ranks, args, expect=None, timeout=300, cwd=cwd)
    return p, p.command


# A small two-class data set: 40 rows, features x1, x2, label A/B, plus an unused column.
def good_rows():
    rng = random.Random(1)
    rows = []
    for i in range(40):
        label = "A" if i % 2 else "B"
        rows.append([f"{rng.uniform(0, 1):.3f}", f"{rng.uniform(0, 1) + i % 2:.3f}",
                     f"{rng.uniform(0, 9):.2f}", label])
    return rows


HEADER = "x1,x2,unused,label"


def csv_text(rows, header=HEADER):
    return header + "\n" + "".join(",".join(r) + "\n" for r in rows)


BASE_INI = """# bad-input test: a tiny classification run (2 trajectories, 60 steps)
[data]
source = csv
path = {data}
features = x1,x2
target = label
task = classification
train = 30
test = 10

[model]
architecture = 2-8-2
activation = tanh
loss = cce

[simmer]
mode = abinitio
time_step = 0.01
steps = 60
T_initial = 0.01
T_target = 0.01
dT = 0

[ensemble]
window = 20

[run]
trajectories = 2
gather_interval = 30
"""


class Workspace:
    def __init__(self, tmp):
        self.tmp = tmp
        self.data = self.write("good.csv", csv_text(good_rows()))
        self.ini = self.write("base.ini", BASE_INI.format(data=self.data))
        self.counter = 0
        self.checked_existing = False  # the --overwrite variant runs once per case (time)

    def path(self, name):
        return os.path.join(self.tmp, name)

    def write(self, name, text, mode="w"):
        p = self.path(name)
        with open(p, mode) as fh:
            fh.write(text)
        return p

    def existing_output(self):
        """A file standing in for an earlier archive: HDF5 signature + random bytes."""
        self.counter += 1
        p = self.path(f"existing{self.counter}.h5")
        blob = b"\x89HDF\r\n\x1a\n" + bytes(random.Random(self.counter).getrandbits(8) for _ in range(4096))
        with open(p, "wb") as fh:
            fh.write(blob)
        return p, blob

    def refused(self, extra, needles, what, config=None, fresh_output=None, existing=True, output_exists=False):
        """Runs the base config + `extra` twice (fresh output; existing output + --overwrite) and
        checks the refusal. `needles` must all appear in the one error line."""
        if SANITIZED and self.checked_existing:
            print(f"skipped under the sanitizers (same path as the first refusal): {what}")
            return
        base = ["--config", config or self.ini]
        variants = []
        fresh = fresh_output or self.path(f"fresh{self.counter}.h5")
        variants.append(("fresh output", base + extra + ["--output", fresh], fresh, None))
        if existing and not self.checked_existing:
            self.checked_existing = True
            old, blob = self.existing_output()
            variants.append(("existing output + --overwrite",
                             base + extra + ["--output", old, "--overwrite"], old, blob))
        for label, args, out, blob in variants:
            p, cmd = run(2, args, self.tmp)
            text = p.stdout + p.stderr
            ctx = f"{what} [{label}]: {cmd}\n--- output ---\n{text}"
            check(p.returncode == 2, f"exit code {p.returncode}, expected 2 (invalid input)\n{ctx}")
            errors = [l for l in text.splitlines() if "simmer_mpi: error:" in l]
            check(len(errors) == 1, f"the error was printed {len(errors)} times\n{ctx}")
            line = errors[0]
            for needle in needles:
                check(needle in line, f"the message does not contain {needle!r}\n{ctx}")
            check("HDF5-DIAG" not in text, f"an HDF5 error stack was printed\n{ctx}")
            check(not p.stdout.startswith("simmer ") and "archive:" not in text,
                  f"the run started before the input was checked\n{ctx}")
            if output_exists:
                pass  # a directory or device given as the output: checked by the caller
            elif blob is None:
                check(not os.path.exists(out), f"an archive {out} was created\n{ctx}")
            else:
                with open(out, "rb") as fh:
                    check(fh.read() == blob, f"the existing output {out} was modified\n{ctx}")
        print(f"ok: {what}: {errors[0].strip()}")

    def accepted(self, extra, what, ranks=2, config=None):
        return self.accepted_with_output(extra, what, ranks, config)[0]

    def accepted_with_output(self, extra, what, ranks=2, config=None):
        """Like accepted; also returns the run's stdout and stderr."""
        out = self.path(f"accepted{self.counter}.h5")
        self.counter += 1
        p, cmd = run(ranks, ["--config", config or self.ini] + extra + ["--output", out], self.tmp)
        check(p.returncode == 0, f"{what}: exit code {p.returncode}: {cmd}\n{p.stdout}\n{p.stderr}")
        check(os.path.exists(out), f"{what}: no archive written")
        print(f"ok: {what}: accepted")
        return out, p.stdout, p.stderr


def same_archive(a_path, b_path):
    """The one archive comparison of the tests (both directions: objects, attributes, bytes)."""
    st.compare_archives(a_path, b_path)


def try_mount_readonly(where):
    os.makedirs(where, exist_ok=True)
    p = subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=1m", "tmpfs", where],
                       capture_output=True, text=True)
    return p.returncode == 0


def case_body(w, case):
    rows = good_rows()
    if case == "data_missing":
        missing = w.path("no_such_file.csv")
        w.refused(["--data.path", missing], [missing, "cannot open", "No such file"], "missing data file")
    elif case == "data_unreadable":
        folder = w.path("a_directory.csv")
        os.mkdir(folder)
        w.refused(["--data.path", folder], [folder, "cannot read", "directory"], "data path is a directory")
        locked = w.write("locked.csv", csv_text(rows))
        os.chmod(locked, 0)
        if os.geteuid() != 0:
            w.refused(["--data.path", locked], [locked, "cannot open", "Permission denied"], "mode-000 file")
        else:
            # Root reads mode-000 files: the run is made as nobody (setpriv, util-linux), one rank
            # without mpirun, its output in a directory nobody may write to. (This sub-case used
            # to be left out as root, which is how CI runs.)
            os.chmod(w.tmp, 0o777)
            out = w.path("locked_out.h5")
            cmd = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", SIMMER, "--config", w.ini,
                   "--data.path", locked, "--output", out]
            p = subprocess.run(cmd, env=dict(ENV, HOME=w.tmp), cwd=w.tmp, capture_output=True, text=True, timeout=300)
            text = p.stdout + p.stderr
            check(p.returncode == 2, f"mode-000 file as nobody: exit {p.returncode}, expected 2\n{' '.join(cmd)}\n{text}")
            for needle in (locked, "cannot open", "Permission denied"):
                check(needle in text, f"mode-000 file as nobody: the message lacks {needle!r}\n{text}")
            check(not os.path.exists(out), "mode-000 file as nobody: an archive was written")
            print("ok: mode-000 file (run as nobody): refused naming the file and the system's reason")
    elif case == "data_empty":
        empty = w.write("empty.csv", "")
        w.refused(["--data.path", empty], [empty, "empty"], "empty file")
        blank = w.write("blank.csv", "\n \r\n\n")
        w.refused(["--data.path", blank], [blank, "empty"], "file of blank lines")
    elif case == "data_header_only":
        header = w.write("header.csv", HEADER + "\n")
        w.refused(["--data.path", header], [header + ":1:", "no data rows"], "header only")
    elif case == "data_ragged":
        short = rows[:5] + [rows[5][:3]] + rows[6:]
        p = w.write("short.csv", csv_text(short))
        w.refused(["--data.path", p], [p + ":7:", "expected 4 fields", "found 3"], "row with a missing field")
        long = rows[:9] + [rows[9] + ["9"]] + rows[10:]
        p = w.write("long.csv", csv_text(long))
        w.refused(["--data.path", p], [p + ":11:", "expected 4 fields", "found 5"], "row with an extra field")
    elif case == "data_non_numeric":
        bad = [r[:] for r in rows]
        bad[11][1] = "abc"
        p = w.write("nonnum.csv", csv_text(bad))
        w.refused(["--data.path", p], [p + ":13:", "column 'x2' (2)", "'abc'", "not a number"],
                  "non-numeric feature")
        bad = [r[:] for r in rows]
        bad[3][0] = "1.2.3"
        p = w.write("nonnum2.csv", csv_text(bad))
        w.refused(["--data.path", p], [p + ":5:", "column 'x1' (1)", "'1.2.3'"], "malformed number")
        # Regression target: the 'unused' column becomes the target; a word in it is refused.
        bad = [r[:] for r in rows]
        bad[20][2] = "many"
        p = w.write("nonnum3.csv", csv_text(bad))
        w.refused(["--data.path", p, "--data.target", "unused", "--data.task", "regression",
                   "--model.loss", "sse", "--model.architecture", "2-8-1"],
                  [p + ":22:", "column 'unused' (3)", "'many'"], "non-numeric regression target")
    elif case == "data_not_finite":
        # nan and NaN are missing values by default (data.missing); without them in the list
        # they are refused like inf, with the way to drop them.
        no_nan = ["--data.missing", "NA,?,empty"]
        for value, line, col in (("nan", 8, 1), ("inf", 17, 2), ("-inf", 30, 1), ("NaN", 41, 2)):
            bad = [r[:] for r in rows]
            bad[line - 2][col - 1] = value
            name = ["x1", "x2"][col - 1]
            p = w.write(f"notfinite_{line}.csv", csv_text(bad))
            hint = ["add it to data.missing"] if value.lower() == "nan" else []
            w.refused(["--data.path", p] + no_nan, [p + f":{line}:", f"column '{name}' ({col})", f"'{value}'",
                                                    "not a finite number"] + hint, f"{value} in a used column")
        bad = [r[:] for r in rows]
        bad[6][0] = "nan"
        p = w.write("nan_missing.csv", csv_text(bad))
        _, out, _ = w.accepted_with_output(["--data.path", p, "--data.test", "9"], "nan as a missing value (default)")
        check("data: 1 of 40 rows dropped (missing values): 1 with 'nan' in column 'x1' (line 8)" in out,
              f"the dropped nan row is not reported:\n{out}")
        bad = [r[:] for r in rows]
        bad[4][2] = "nan"
        p = w.write("nan_unused.csv", csv_text(bad))
        w.accepted(["--data.path", p], "nan in an unused column")
    elif case == "data_overflow":
        # ±1.7e308 are finite doubles, but max - min over them is not: named at the first one.
        bad = [r[:] for r in rows]
        bad[7][0] = "1.7e308"
        bad[12][0] = "-1.7e308"
        p = w.write("overflow_both.csv", csv_text(bad))
        w.refused(["--data.path", p], [p + ":9:", "column 'x1' (1)", "'1.7e+308'", "overflow the scaling to [-1, 1]"],
                  "+-1.7e308 in a feature")
        # One huge value among small ones: 2 (x - min) overflows; wherever the split puts it.
        bad = [r[:] for r in rows]
        bad[20][1] = "-1.7e308"
        p = w.write("overflow_one.csv", csv_text(bad))
        w.refused(["--data.path", p], [p + ":22:", "column 'x2' (2)", "'-1.7e+308'", "overflow the scaling"],
                  "-1.7e308 among values in [0, 2]")
        # A regression target of 1e200: its squared errors overflow the loss in target units.
        bad = [r[:] for r in rows]
        bad[3][2] = "1e200"
        p = w.write("overflow_target.csv", csv_text(bad))
        w.refused(["--data.path", p, "--data.target", "unused", "--data.task", "regression", "--model.loss", "sse",
                   "--model.architecture", "2-8-1"],
                  [p + ":5:", "column 'unused' (3)", "'1e+200'", "overflow the loss"], "1e200 in the target")
    elif case == "data_constant_target":
        const = [r[:2] + ["2.5", r[3]] for r in rows]
        p = w.write("constant_target.csv", csv_text(const))
        w.refused(["--data.path", p, "--data.target", "unused", "--data.task", "regression", "--model.loss", "sse",
                   "--model.architecture", "2-8-1"],
                  [p, "target 'unused'", "2.5 in all 30 training rows", "constant target"], "constant target")
    elif case == "data_missing_class":
        # Class C has 2 of 40 rows; 10 training rows miss both for about half the split seeds:
        # the first such seed (found with --estimate, which stops after loading) is used.
        three = [r[:] for r in rows]
        three[0][3] = "C"
        three[5][3] = "C"
        p = w.write("rare_class.csv", csv_text(three))
        args = None
        for seed in range(1, 31):
            trial = ["--data.path", p, "--model.architecture", "2-8-3", "--data.train", "10", "--data.test", "30",
                     "--data.split_seed", str(seed)]
            q, _ = run(2, ["--config", w.ini] + trial + ["--estimate"], w.tmp)
            if q.returncode == 2 and "no row in the training split" in q.stderr:
                args = trial
                break
        check(args is not None, "no split seed in 1..30 leaves class C out of 10 training rows")
        w.refused(args, [p, "class 'C'", "no row in the training split", "2 in the test split", "2 in the data",
                         "data.stratify = true"], "a class only in the test split")
        out = w.accepted(args + ["--data.stratify", "true"], "the same with data.stratify = true")
        with h5py.File(out, "r") as f:
            train = f["data/train/y"][()]
            test = f["data/test/y"][()]
            check(sorted(set(train.tolist())) == [0, 1, 2] and sorted(set(test.tolist())) == [0, 1, 2],
                  f"the stratified split lacks a class: train {train}, test {test}")
            check(abs(int((train == 0).sum()) - int((train == 1).sum())) <= 1,
                  f"the stratified split is not balanced: {train}")
    elif case == "config_empty":
        for name, text in (("empty.ini", ""), ("comments.ini", "# nothing here\n; nor here\n\n"),
                           ("headers.ini", "[data]\n[model]\n")):
            ini = w.write(name, text)
            w.refused([], [f"config file '{ini}'", "sets no keys"], f"config file {name}", config=ini)
    elif case == "data_drops":
        gaps = [r[:] for r in rows]
        for i in (2, 9, 30):
            gaps[i][0] = "NA"
        gaps[14][1] = ""
        gaps[21][1] = "?"
        p = w.write("gaps.csv", csv_text(gaps))
        out, stdout, stderr = w.accepted_with_output(["--data.path", p, "--data.test", "5"], "rows with missing values")
        expect = ("data: 5 of 40 rows dropped (missing values): 3 with 'NA' in column 'x1' (lines 4, 11, 32); "
                  "1 with an empty field in column 'x2' (line 16); 1 with '?' in column 'x2' (line 23)")
        check(stdout.count(expect) == 1, f"the drops are not reported once on stdout:\n{stdout}\n{stderr}")
        with h5py.File(out, "r") as f:
            check(int(f["data"].attrs["rows_dropped"]) == 5, "/data rows_dropped is not 5")
        summary = os.path.join(os.path.dirname(SIMMER), "simmer_analyze")
        s = subprocess.run([summary, "summary", out], env=ENV, capture_output=True, text=True, timeout=120)
        check(s.returncode == 0 and expect[len("data: "):] in s.stdout,
              f"simmer_analyze summary does not show the drops:\n{s.stdout}\n{s.stderr}")
        # data.missing of one's own: '-1' marks a missing value, '?' is then no number.
        custom = [r[:] for r in rows]
        custom[4][0] = "-1"
        p2 = w.write("custom_missing.csv", csv_text(custom))
        _, stdout, _ = w.accepted_with_output(["--data.path", p2, "--data.missing", "-1", "--data.test", "9"],
                                              "data.missing = -1")
        check("1 with '-1' in column 'x1' (line 6)" in stdout, f"the custom token is not reported:\n{stdout}")
        w.refused(["--data.path", p, "--data.missing", "NA"], [p + ":16:", "column 'x2' (2)", "not a number"],
                  "an empty field when data.missing does not list it", existing=False)
        # Extra evaluation points are read the same way, but a point with a missing value is
        # refused: dropping it would shift the points' rows.
        pts = w.write("points.csv", "x1,x2\n0.1,0.2\n0.5,0.7\n")
        out = w.accepted(["--ensemble.points", pts], "extra points")
        with h5py.File(out, "r") as f:
            check(f["data/points/x"].shape == (2, 2), f"/data/points/x {f['data/points/x'].shape}")
        gap_pts = w.write("gap_points.csv", "x1,x2\n0.1,0.2\n0.5,NA\n")
        w.refused(["--ensemble.points", gap_pts], ["'ensemble.points'", "1 with 'NA' in column 'x2' (line 3)",
                                                   "every point needs every feature"],
                  "an extra point with a missing value", existing=False)
        # A class named NA is a class (warned once); data.missing_in_target = true drops it.
        na = [r[:3] + ["NA" if r[3] == "A" else "B"] for r in rows]
        p3 = w.write("na_class.csv", csv_text(na))
        out, stdout, stderr = w.accepted_with_output(["--data.path", p3], "a class named NA")
        with h5py.File(out, "r") as f:
            names = st.strings(f["data/class_names"])
            check(names == ["B", "NA"], f"class names {names}")
        check(stderr.count("the class 'NA' (20 rows) is spelled like a missing value") == 1 and
              "data.missing_in_target = true" in stderr, f"no single warning about the class NA:\n{stderr}")
        check("rows dropped" not in stdout, f"rows were dropped:\n{stdout}")
        w.refused(["--data.path", p3, "--data.missing_in_target", "true"], [p3, "only one class ('B')"],
                  "data.missing_in_target = true drops the NA rows (leaving one class)", existing=False)
    elif case == "data_delimiter":
        semi = w.write("semicolon.csv", HEADER.replace(",", ";") + "\n" + "".join(";".join(r) + "\n" for r in rows))
        w.refused(["--data.path", semi], [semi + ":1:", "unknown column 'x1'", "has a ';'",
                                          "set data.delimiter = ;"], "a ';'-separated file")
        a = w.accepted(["--data.path", semi, "--data.delimiter", ";"], "data.delimiter = ;")
        tabs = w.write("tabs.tsv", HEADER.replace(",", "\t") + "\n" + "".join("\t".join(r) + "\n" for r in rows))
        w.refused(["--data.path", tabs], [tabs + ":1:", "has a tab", "set data.delimiter = tab"], "a tab file",
                  existing=False)
        b = w.accepted(["--data.path", tabs, "--data.delimiter", "tab"], "data.delimiter = tab")
        c = w.accepted([], "the same rows with commas")
        with h5py.File(a, "r") as fa, h5py.File(b, "r") as fb, h5py.File(c, "r") as fc:
            for name in ("data/train/x", "data/test/x", "data/train/y"):
                check(fa[name][()].tobytes() == fc[name][()].tobytes() == fb[name][()].tobytes(),
                      f"/{name} differs between the ';', tab and ',' files")
        w.refused(["--data.delimiter", "ab"], ["data.delimiter", "'ab'", "one character"], "data.delimiter = ab",
                  existing=False)
    elif case == "data_line_endings":
        lf = w.accepted([], "LF line endings")
        for label, ending in (("CR", "\r"), ("CRLF", "\r\n")):
            p = w.write(f"{label}.csv", (HEADER + "\n" + "".join(",".join(r) + "\n" for r in rows)).replace("\n", ending),
                        mode="w")
            other = w.accepted(["--data.path", p], f"{label} line endings")
            with h5py.File(lf, "r") as fa, h5py.File(other, "r") as fb:
                for name in ("data/train/x", "data/test/x", "data/train/y", "data/test/y"):
                    check(fa[name][()].tobytes() == fb[name][()].tobytes(), f"/{name} differs with {label} endings")
    elif case == "data_all_features":
        # features = * takes x1, x2 and unused; data.exclude = unused gives the base run's inputs.
        out = w.accepted(["--data.features", "*", "--data.exclude", "unused"], "data.features = * minus unused")
        base = w.accepted([], "named features")
        with h5py.File(out, "r") as fa, h5py.File(base, "r") as fb:
            names = st.strings(fa["data/feature_names"])
            check(names == ["x1", "x2"], f"feature names {names}")
            check(fa["data/train/x"][()].tobytes() == fb["data/train/x"][()].tobytes(), "/data/train/x differs")
        w.refused(["--data.features", "*", "--model.architecture", "2-8-2"],
                  ["model.architecture", "3 feature"], "features = * gives three inputs")
        w.refused(["--data.exclude", "unused"], ["data.exclude", "data.features = *"], "exclude without *",
                  existing=False)
        const = [r[:2] + ["4.0", r[3]] for r in rows]
        p = w.write("constant_feature.csv", csv_text(const))
        _, stdout, stderr = w.accepted_with_output(["--data.path", p, "--data.features", "*", "--model.architecture",
                                                    "3-8-2"], "a constant feature")
        check(stderr.count("1 of 3 feature(s) constant in the 30 training rows: 'unused'") == 1,
              f"no single warning naming the constant feature:\n{stderr}")
    elif case == "data_unknown_column":
        w.refused(["--data.features", "x1,zz"], [w.data + ":1:", "unknown column 'zz'", "'x1', 'x2'"],
                  "unknown feature column")
        w.refused(["--data.target", "species"], [w.data + ":1:", "unknown column 'species'"],
                  "unknown target column")
    elif case == "data_one_class":
        one = [r[:3] + ["A"] for r in rows]
        p = w.write("oneclass.csv", csv_text(one))
        w.refused(["--data.path", p], [p, "column 'label' (4)", "only one class ('A')"], "one class")
    elif case == "data_too_many_test_rows":
        w.refused(["--data.test", "100"], ["data.test", "'100'", "40 rows", w.data],
                  "more test rows than data")
        w.refused(["--data.train", "41", "--data.test", "0"], ["data.train", "'41'", "40 rows", w.data],
                  "more training rows than data")
    elif case == "architecture_mismatch":
        w.refused(["--model.architecture", "3-8-2"], ["model.architecture", "'3-8-2'", "3 inputs",
                                                      "2 feature"], "input width != features")
        w.refused(["--model.architecture", "2-8-3"], ["model.architecture", "'2-8-3'", "3 outputs",
                                                      "needs 2"], "output width != classes")
    elif case == "unknown_name":
        for key, value in (("model.activation", "swish"), ("model.output", "softmax"),
                           ("model.loss", "hinge"), ("model.init", "he_normal"),
                           ("simmer.mode", "hot")):
            w.refused([f"--{key}", value], [f"--{key} = '{value}': must be one of"], f"unknown {key}")
        # The same in the INI file: refused as it is read, naming the file and line.
        text = open(w.ini).read()
        line = text.splitlines().index("activation = tanh") + 1
        ini = w.write("unknown_activation.ini", text.replace("activation = tanh", "activation = swish"))
        w.refused([], [f"{ini}:{line}: model.activation = 'swish': must be one of tanh | relu"],
                  "unknown activation in the INI file", config=ini)
    elif case == "ini_syntax":
        text = open(w.ini).read()
        lines = text.splitlines()
        steps_line = lines.index("steps = 60") + 1
        ini = w.write("bad_number.ini", text.replace("steps = 60", "steps = sixty"))
        w.refused([], [f"{ini}:{steps_line}:", "simmer.steps", "'sixty'", "not an integer"],
                  "a word for a number in the INI file", config=ini)
        ini = w.write("bad_key.ini", text.replace("window = 20", "windw = 20"))
        window_line = lines.index("window = 20") + 1
        w.refused([], [f"{ini}:{window_line}:", "ensemble.windw", "did you mean"],
                  "unknown key in the INI file", config=ini)
    elif case == "nonpositive":
        # The step's one range is the key table's (>= 1e-12, as --help says).
        for key, value, bound in (("simmer.time_step", "0", ">= 1e-12"), ("simmer.time_step", "-0.001", ">= 1e-12"),
                                  ("simmer.steps", "0", "> 0"), ("simmer.steps", "-5", "> 0"),
                                  ("ensemble.window", "0", "> 0"), ("ensemble.window", "-3", "> 0")):
            w.refused([f"--{key}", value], [f"'{key}'", f"'{value}'", "must be " + bound], f"{key} = {value}")
    elif case == "window_too_long":
        w.refused(["--ensemble.window", "61"], ["'ensemble.window'", "'61'", "simmer.steps = 60"],
                  "window longer than the run")
    elif case == "T_target_below_initial":
        w.refused(["--simmer.T_initial", "0.02", "--simmer.T_target", "0.01"],
                  ["'simmer.T_target'", "'0.01'", "simmer.T_initial = 0.02"], "T_target < T_initial")
    elif case == "output_dir_missing":
        out = w.path("no_such_dir/out.h5")
        w.refused([], ["'run.output'", out, "does not exist"], "output directory missing",
                  fresh_output=out, existing=False)
    elif case == "output_dir_not_writable":
        # /proc accepts no new files, even from root (who ignores permission bits).
        out = "/proc/simmer_bad_input_test.h5"
        w.refused([], ["'run.output'", out, "not writable"], "output directory /proc",
                  fresh_output=out, existing=False)
        mount_point = w.path("readonly")
        if not try_mount_readonly(mount_point):
            # Said to CTest (exit 77: skipped), not passed over: CI runs as root and mounts.
            print("skipped: cannot mount a read-only tmpfs here: the read-only file system sub-case is not run "
                  "(the /proc one passed)")
            sys.exit(SKIP)
        try:
            out = os.path.join(mount_point, "out.h5")
            w.refused([], ["'run.output'", out, "not writable"], "output on a read-only file system",
                      fresh_output=out, existing=False)
        finally:
            subprocess.run(["umount", mount_point])
    elif case == "output_exists":
        out = w.accepted([], "a first run")
        with open(out, "rb") as fh:
            before = fh.read()
        p, cmd = run(2, ["--config", w.ini, "--output", out], w.tmp)
        text = p.stdout + p.stderr
        ctx = f"{cmd}\n--- output ---\n{text}"
        check(p.returncode == 2, f"exit code {p.returncode}, expected 2\n{ctx}")
        errors = [l for l in text.splitlines() if "simmer_mpi: error:" in l]
        check(len(errors) == 1, f"the error was printed {len(errors)} times\n{ctx}")
        for needle in ("'run.output'", out, "--overwrite"):
            check(needle in errors[0], f"the message does not contain {needle!r}\n{ctx}")
        with open(out, "rb") as fh:
            check(fh.read() == before, f"the existing archive was modified\n{ctx}")
        print(f"ok: output exists: {errors[0].strip()}")
    elif case == "output_is_input":
        for what, target in (("the data file", w.data), ("the INI file", w.ini)):
            with open(target, "rb") as fh:
                before = fh.read()
            p, cmd = run(2, ["--config", w.ini, "--output", target, "--overwrite"], w.tmp)
            text = p.stdout + p.stderr
            ctx = f"{cmd}\n--- output ---\n{text}"
            check(p.returncode == 2, f"{what}: exit code {p.returncode}, expected 2\n{ctx}")
            check("'run.output'" in text and "own input" in text, f"{what}: the message does not say so\n{ctx}")
            with open(target, "rb") as fh:
                check(fh.read() == before, f"{what} was modified\n{ctx}")
            print(f"ok: output is {what}: refused, the input kept")
    elif case == "output_not_a_file":
        directory = w.path("a_directory")
        os.makedirs(directory)
        for out, why in ((directory, "is a directory"), ("/dev/null", "not a regular file")):
            for extra in ([], ["--overwrite"]):
                w.refused(extra, ["'run.output'", out, why], f"output {out} {' '.join(extra)}",
                          fresh_output=out, existing=False, output_exists=True)
        if not os.path.isdir(directory) or os.listdir(directory):
            check(False, "the directory given as run.output was changed")
    elif case == "absurd_sizes":
        for key, value, needle in (("run.trajectories", "2000000000000000000", "must be <= 1e7"),
                                   ("simmer.steps", "9223372036854775807", "must be <= 1e12"),
                                   ("adam.epochs", "9223372036854775807", "must be <= 1e12")):
            w.refused([f"--{key}", value, "--estimate"], [f"'{key}'", value, needle], f"{key} = {value}",
                      existing=False)
        w.refused(["--simmer.steps", "900000000000", "--ensemble.window", "900000000000", "--ensemble.count", "0",
                   "--ensemble.stride", "1", "--estimate"], ["'ensemble.window'", "members per trajectory"],
                  "9e11 members per trajectory", existing=False)
        w.refused(["--run.trajectories", "1000000", "--simmer.steps", "900000000000", "--ensemble.window",
                   "900000000", "--ensemble.count", "0", "--ensemble.stride", "10", "--run.trace_every", "100000000", "--model.architecture", "2-1000-2",
                   "--estimate"],
                  ["'run.trajectories'", "/posterior/params", "PB"], "a 290 PB posterior", existing=False)
    elif case == "memory":
        w.refused(["--run.memory_limit", "1M"], ["'run.memory_limit'", "'1M'", "the run needs about",
                                                 "model.architecture", "off to skip"], "a 1 MB memory limit")
        w.refused(["--run.memory_limit", "12 parsecs"], ["run.memory_limit", "a size like"], "a limit that is no size",
                  existing=False)
        w.accepted(["--run.memory_limit", "off"], "run.memory_limit = off")
        # auto: a network whose parameter vectors alone need twice the node's available memory is
        # refused. The expectation comes from /proc/meminfo and the parameter count, not from the
        # program's own estimate (which it used to be read from): a run keeps at least 8 vectors of
        # every parameter in float64 (parameters, gradient, velocities, baseline, Adam's moments
        # and previous iterate), 64 bytes a parameter.
        available = None
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    available = int(line.split()[1]) * 1024
        check(available is not None, "no MemAvailable in /proc/meminfo")
        hidden = max(1000, min(int(2 * available / 64 / 5) + 1, 199_999_999))  # 2-H-2: 5 H + 2 parameters
        if 64 * (5 * hidden + 2) < 1.5 * available:
            print(f"skipped: this node's {available / 1e9:.3g} GB cannot be exceeded within 1e9 parameters")
            sys.exit(SKIP)
        # (the file system check would refuse the huge archive first: pretend there is room)
        p = st.run(SIMMER, 2, ["--config", w.ini, "--model.architecture", f"2-{hidden}-2", "--estimate",
                               "--output", w.path("huge.h5")],
                   expect=None, timeout=300, env={"SIMMER_TEST_FREE_BYTES": "1000000000000000000"}, cwd=w.tmp)
        cmd = p.command
        text = p.stdout + p.stderr
        check(p.returncode == 2, f"a network needing over {64 * (5 * hidden + 2) / 1e9:.3g} GB of "
                                 f"{available / 1e9:.3g} GB available was not refused (exit {p.returncode})\n{cmd}\n{text}")
        check("'run.memory_limit'" in text and "the run needs about" in text, f"unclear refusal:\n{text}")
        check(not os.path.exists(w.path("huge.h5")), "the refused run left an archive")
        print(f"ok: auto memory limit: 2-{hidden}-2 (>= {64 * (5 * hidden + 2) / 1e9:.3g} GB) refused on a node with "
              f"{available / 1e9:.3g} GB available")
    elif case == "more_ranks_than_trajectories":
        one = w.accepted([], "2 trajectories on 1 rank", ranks=1)
        three = w.accepted([], "2 trajectories on 3 ranks (one idle)", ranks=3)
        same_archive(one, three)
        with h5py.File(three, "r") as f:
            check(int(f.attrs["mpi_ranks"]) == 3, "mpi_ranks is not 3")
            check(f["posterior/params"].shape[0] == 2, "the archive does not hold 2 chains")
        print("ok: an idle rank changes nothing: the -n 3 archive equals the -n 1 archive")
    else:
        sys.exit(f"unknown case {CASE}")


def main():
    with tempfile.TemporaryDirectory() as tmp:
        w = Workspace(tmp)
        try:
            case_body(w, CASE)
        except Failure as e:
            print("FAIL:", e)
            if CASE in KNOWN_OPEN:
                print(f"KNOWN OPEN BUG ({KNOWN_OPEN[CASE]}): reported as skipped")
                sys.exit(SKIP)
            sys.exit(1)
    if CASE in KNOWN_OPEN:
        print(f"note: {CASE} passes: remove it from KNOWN_OPEN")
    print("1 passed, 0 failed")


main()
