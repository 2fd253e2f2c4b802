"""Shared by tests/mpi/test_bad_input.py: the small data set and INI file the cases break, the
workspace that writes the broken files and runs simmer_mpi on them (a refusal, an accepted run),
and the steps of the case table (Refused, Accepted) with the helpers that build their files."""
import os
import random
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import simmer_test as st  # noqa: E402  (tests/simmer_test.py: ENV, fail, archive comparison, ...)

SIMMER = st.SIMMER_MPI
ENV = st.ENV
SANITIZED = st.SANITIZED


def check(ok, msg):
    if not ok:
        st.fail(msg)


def run(ranks, args, cwd):
    """simmer_mpi in `cwd`, any exit code: (result, command line). A run here takes seconds: one
    that has not ended after 120 fails with its processes listed (before CTest's limit of 300 s
    for the whole test would end it without a word)."""
    p = st.run(SIMMER, ranks, args, expect=None, timeout=120, cwd=cwd)
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
validation_fraction = 0

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
# (a ramp in loss units, not the default ladder in posterior units)
ladder =
temperature_unit = loss

[ensemble]
window = 20

[run]
trajectories = 2
gather_interval = 30
"""


def ini_line(text):
    """The line number of `text` in the base INI file."""
    return BASE_INI.splitlines().index(text) + 1


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


def try_mount_readonly(where):
    os.makedirs(where, exist_ok=True)
    p = subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=1m", "tmpfs", where],
                       capture_output=True, text=True)
    return p.returncode == 0


# The files a step of the case table writes: (name, content), the content a text or a function
# of the workspace.

def csv(edit):
    """A CSV file: the good rows after `edit` (a function of the rows)."""
    return lambda w: csv_text(edit(good_rows()))


def cells(*changes):
    """An edit of the rows: a copy with rows[i][j] = value for each (i, j, value)."""
    def edit(rows):
        out = [r[:] for r in rows]
        for i, j, value in changes:
            out[i][j] = value
        return out
    return edit


def ini_with(old, new):
    """An INI file: the base one with `old` replaced by `new`."""
    return lambda w: open(w.ini).read().replace(old, new)


def _filled(value, w, file):
    """`value` (a str or a list of them) with {file} (the step's file), {data} (the good data
    file), {ini} (the base INI file) and {tmp} (the workspace) replaced."""
    if isinstance(value, list):
        return [_filled(v, w, file) for v in value]
    if value is None:
        return None
    if "{file}" in value:
        assert file is not None, f"{value!r}: the step writes no file"
        value = value.replace("{file}", file)
    return value.replace("{data}", w.data).replace("{ini}", w.ini).replace("{tmp}", w.tmp)


class Refused:
    """A step of the case table: `write` (name, content) is written first when given; then the
    base run + `extra` (with `config` instead of the base INI) must be refused naming every one of
    `needles` (Workspace.refused; its other options: fresh_output, existing, output_exists).
    Placeholders: see _filled."""

    def __init__(self, what, extra, needles, write=None, config=None, **options):
        self.what, self.extra, self.needles, self.file, self.config = what, extra, needles, write, config
        self.options = options

    def __call__(self, w):
        file = write_file(w, self.file)
        options = dict(self.options)
        if "fresh_output" in options:
            options["fresh_output"] = _filled(options["fresh_output"], w, file)
        w.refused(_filled(self.extra, w, file), _filled(self.needles, w, file), self.what,
                  config=_filled(self.config, w, file), **options)


class Accepted:
    """A step of the case table: `write` written first when given; the base run + `extra` must
    finish (exit 0) and write its archive."""

    def __init__(self, what, extra, write=None):
        self.what, self.extra, self.file = what, extra, write

    def __call__(self, w):
        file = write_file(w, self.file)
        w.accepted(_filled(self.extra, w, file), self.what)


def write_file(w, spec):
    """Writes a step's file (name, content); its path, or None when there is none."""
    if spec is None:
        return None
    name, content = spec
    return w.write(name, content(w) if callable(content) else content)
