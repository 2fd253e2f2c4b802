"""Helpers shared by the Python end-to-end tests (run with Debian's /usr/bin/python3, which has
h5py and numpy): running simmer_mpi under mpirun, failing with a message, comparing archives,
and a numpy re-implementation of the archived dense networks."""
import gzip
import os
import struct
import subprocess
import sys
import tempfile
import time

import numpy as np

# OpenMPI refuses root unless told; TERM=dumb keeps progress in plain lines.
ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", TERM="dumb")
# Root attributes that say how a run was carried out, not what it computed (a stopped and
# resumed run has written more checkpoints, so its checkpoint_generation is higher; io_* count
# the transfers of the ranks that wrote it).
PROVENANCE = {"created_at", "command_line", "mpi_ranks", "wall_seconds", "run_id", "checkpoint_generation"}


def provenance(name):
    return name in PROVENANCE or name.startswith("io_")


# The programs under test and the project's root, as CTest passes them (tests/conftest.py).
SIMMER_MPI = os.environ.get("SIMMER_MPI", "")
SIMMER_ANALYZE = os.environ.get("SIMMER_ANALYZE", "")
ROOT = os.environ.get("SIMMER_ROOT", "")
# The sanitizer build (a simmering step is several times slower there: tests may shorten runs).
SANITIZED = os.environ.get("SIMMER_TEST_SANITIZED") in ("1", "ON", "TRUE", "true")



def iris_small(trajectories=4):
    """A small Iris retrofit run's options (jobs/iris_retrofit.ini shortened to seconds): every member
    stored, a stride so the members and votes are deterministic."""
    return ["--config", os.path.join(ROOT, "jobs/iris_retrofit.ini"),
            "--data.path", os.path.join(ROOT, "data/iris.csv"),
            "--adam.epochs", "60", "--simmer.steps", "400", "--simmer.every", "50",
            "--ensemble.window", "200", "--ensemble.fraction", "0", "--ensemble.count", "0",
            "--ensemble.stride", "2", "--ensemble.store_every", "1",
            "--run.trajectories", str(trajectories), "--run.gather_interval", "150", "--run.trace_every", "10"]


def shared_archive(make, name="run.h5"):
    """A module-scoped pytest fixture: the path of the archive `make(path)` writes, in a temporary
    directory of its own removed after the module. Tests read it, never write it. (CTest runs each
    test in its own process, so there every test makes its own; a by-hand run of a file makes it
    once.) Assign it to a module name, which is the fixture's name: `reference = shared_archive(...)`."""
    import pytest

    @pytest.fixture(scope="module")
    def fixture():
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, name)
            make(path)
            yield path
    return fixture


def archives_at(run, args, tmp, name, counts=None):
    """`args` run through `run(ranks, args)` at each rank count (1, 2 and 4; 1 and 2 under the
    sanitizers, unless `counts`), writing tmp/<name>_n<ranks>.h5: the archives' paths, in order."""
    paths = []
    for n in counts or ((1, 2) if SANITIZED else (1, 2, 4)):
        paths.append(os.path.join(tmp, f"{name}_n{n}.h5"))
        run(n, list(args) + ["--output", paths[-1]])
    return paths

def fail(msg):
    """Fails the test with `msg` (pytest reports it; a script run by hand exits 1)."""
    raise AssertionError(msg)


# OpenMPI's own start-up failing under load ("OPAL ERROR: Unreachable in file ext3x_client.c": a
# rank's PMIx client lost its server inside MPI_Init, before any simmer code ran; mpirun may then
# wait on the defunct rank until the timeout). The one failure a launch is retried for, once.
LAUNCH_FLAKE = "An error occurred in MPI_Init"


def run(program, ranks, args, expect=0, timeout=600, env=None, cwd=None):
    """`program` (simmer_mpi or simmer_analyze) under `mpirun --oversubscribe -n ranks`, or alone
    when `ranks` is None, with ENV plus `env` (also passed on with -x); fails naming the command
    when it does not exit with `expect` (None: any code) or does not end within `timeout` seconds
    (a hang, reported with the job's processes as they stood). A launch that died in OpenMPI's
    MPI_Init (LAUNCH_FLAKE) is run once more, said on stderr. The command line is kept as the
    result's `command`. The one launcher of the tests."""
    extra = env or {}
    cmd = [] if ranks is None else ["mpirun", "--oversubscribe", "-n", str(ranks)]
    if ranks is not None:
        cmd += [x for k, v in extra.items() for x in ("-x", f"{k}={v}")]
    cmd += [program] + list(args)
    for attempt in (1, 2):
        # A session of its own: a hang is reported with every process of the job as it stood.
        proc = subprocess.Popen(cmd, env=dict(ENV, **extra), cwd=cwd, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, start_new_session=True)
        try:
            out, err = proc.communicate(timeout=timeout)
            hang = None
        except subprocess.TimeoutExpired:
            hang = subprocess.run(["ps", "-s", str(proc.pid), "-o", "pid,ppid,stat,etime,wchan:32,args"],
                                  capture_output=True, text=True).stdout
            kill_session(proc)
            out, err = proc.communicate()
        failed = hang is not None or (expect is not None and proc.returncode != expect)
        if failed and attempt == 1 and LAUNCH_FLAKE in err:
            print(f"note: {' '.join(cmd)} died in OpenMPI's MPI_Init (a launcher failure, before simmer ran); "
                  f"run once more:\n{err[-1000:]}", file=sys.stderr)
            continue
        break
    if hang is not None:
        fail(f"{' '.join(cmd)} did not end within {timeout} s (a hang); its processes then:\n{hang}\n"
             f"--- stdout ---\n{out[-3000:]}\n--- stderr ---\n{err[-3000:]}")
    p = subprocess.CompletedProcess(cmd, proc.returncode, out, err)
    p.command = " ".join(cmd)
    if expect is not None and p.returncode != expect:
        fail(f"{p.command} exited {p.returncode} (expected {expect})\n{p.stdout[-4000:]}\n{p.stderr[-4000:]}")
    return p


def start(program, ranks, args, env=None, output=True):
    """`program` under mpirun in the background, in a session of its own (so that a test can
    signal or kill exactly its ranks: kill_session, pkill -s), with ENV plus `env`; its output
    merged into `proc.stdout` (text), or discarded when `output` is False."""
    extra = env or {}
    cmd = ["mpirun", "--oversubscribe", "-n", str(ranks)] + [x for k, v in extra.items() for x in ("-x", f"{k}={v}")]
    return subprocess.Popen(cmd + [program] + list(args), env=dict(ENV, **extra),
                            stdout=subprocess.PIPE if output else subprocess.DEVNULL, stderr=subprocess.STDOUT,
                            text=True, start_new_session=True)


def opts(base, *pairs):
    """`base` with `--key value` pairs replaced or added (simmer_mpi refuses a repeated option)."""
    out = list(base)
    for key, value in zip(pairs[0::2], pairs[1::2]):
        if key in out:
            out[out.index(key) + 1] = value
        else:
            out += [key, value]
    return out


def _comparable(f, value):
    """An attribute or small dataset value in a comparable form: object references become the
    names they point to, arrays their dtype, shape and bytes (NaN payloads compared bitwise)."""
    import h5py
    if isinstance(value, h5py.Reference):
        return ("ref", f[value].name if value else None)
    if isinstance(value, np.ndarray):
        if value.dtype.kind == "O" or value.dtype.names is not None:
            return ("array", value.shape, [_comparable(f, x) for x in value.reshape(-1).tolist()])
        return ("array", value.dtype.str, value.shape, value.tobytes())
    if isinstance(value, (tuple, list)):
        return tuple(_comparable(f, x) for x in value)
    if isinstance(value, np.void):
        return tuple(_comparable(f, x) for x in value.tolist())
    if isinstance(value, np.generic):
        return (value.dtype.str, value.tobytes())
    return value


def strings(ds):
    """A string dataset as a list of str: a character array [n, width] (netCDF's NC_CHAR, archive
    format 2) or n fixed-length strings (format 1)."""
    v = ds[()]
    if v.dtype.kind == "S" and v.dtype.itemsize == 1 and v.ndim == 2:
        return [row.tobytes().decode("utf-8", "replace").rstrip("\x00") for row in v]
    return [x.decode("utf-8", "replace").rstrip("\x00") if isinstance(x, bytes) else str(x) for x in np.atleast_1d(v)]


def text(value):
    """An HDF5 text attribute or string as str (h5py gives bytes for fixed-length strings)."""
    if isinstance(value, np.ndarray):
        value = value.reshape(-1)[0] if value.size else b""
    return value.decode("utf-8", "replace").rstrip("\x00") if isinstance(value, bytes) else str(value)


def check_window_line(text_out, path, window, target=1.1):
    """The window line (the end of a run, simmer_analyze summary) against the archive's R-hats of the
    not-mixed trajectories: a stationary series' split-R-hat^2 - 1 falls as 1/window, so the window that brings R-hat to
    `target` is window (R-hat^2 - 1)/(target^2 - 1), for the median and the largest R-hat above it (to
    two significant digits). Returns whether the archive had any R-hat above the target."""
    import h5py  # here: the module is imported by scripts that read no archive
    with h5py.File(path, "r") as f:
        rhat = f["diagnostics/rhat"][()]
        not_mixed = np.array([v == "not mixed" for v in strings(f["diagnostics/verdict"])])
    above = rhat[not_mixed & np.isfinite(rhat) & (rhat > target)]
    line = next((ln for ln in text_out.splitlines() if ln.strip().startswith("window: ")), None)
    if above.size == 0:
        if line is not None:
            fail(f"{path}: no split-R-hat above {target}, yet a window line: {line}")
        return False

    def steps(v):
        unit = 10.0 ** max(0.0, np.floor(np.log10(v)) - 1.0)
        return f"{int(np.round(v / unit) * unit)}"

    need = [window * (r * r - 1) / (target * target - 1) for r in (np.median(above), above.max())]
    want = (f"split-R^ above {target:.2g} in {above.size} of {rhat.size} trajectories (not mixed) over the {window}-step "
            "window",
            f"about {steps(need[0])} steps ({need[0] / window:.0f}x)", f"and {steps(need[1])} ({need[1] / window:.0f}x)")
    if line is None or not all(w in line for w in want):
        fail(f"{path}: the window line should say {want}; it is: {line}")
    return True


def _config_lines(ds):
    """/config's INI lines without the placement ones: where the archive is (run.output), how
    many ranks share a gradient (run.ranks_per_trajectory) and how much time checkpoints may take
    (run.checkpoint_budget) say nothing about what was computed."""
    v = ds[()]
    if isinstance(v, np.ndarray):
        v = b"".join(x if isinstance(x, bytes) else str(x).encode() for x in v.reshape(-1))
    if isinstance(v, bytes):
        v = v.decode("utf-8", "replace")
    lines = [ln.rstrip() for ln in str(v).rstrip("\x00").splitlines()]
    return [ln for ln in lines if not ln.lstrip().startswith(("output", "ranks_per_trajectory", "checkpoint_budget"))]


def archive_differences(a_path, b_path):
    """Every difference between two archives, in both directions: objects present in one only,
    a dataset against a group, attributes (on every object; the root's provenance ones and each
    run's run_id aside) present in one only or with other values, datasets with another dtype,
    shape or bytes; /config compared line by line without its placement lines. [] when equal."""
    import h5py
    diffs = []
    with h5py.File(a_path, "r") as ref, h5py.File(b_path, "r") as cand:
        def objects(f):
            out = {"/": f}
            f.visititems(lambda name, obj: out.__setitem__("/" + name, obj))
            return out

        a, b = objects(ref), objects(cand)
        diffs += [f"{name}: only in {a_path}" for name in sorted(set(a) - set(b))]
        diffs += [f"{name}: only in {b_path}" for name in sorted(set(b) - set(a))]
        for name in sorted(set(a) & set(b)):
            if name == "/config_strlen":  # /config's length (its NAME says it): the placement lines differ
                continue
            x, y = a[name], b[name]
            if isinstance(x, h5py.Dataset) != isinstance(y, h5py.Dataset):
                diffs.append(f"{name}: a dataset in one archive, a group in the other")
                continue
            for key in sorted(set(x.attrs) | set(y.attrs)):
                if (name == "/" and provenance(key)) or key == "run_id":
                    continue
                if name == "/config" and key == "content_fnv1a64":  # its placement lines differ (below)
                    continue
                if key not in x.attrs or key not in y.attrs:
                    diffs.append(f"{name} attribute {key}: only in {a_path if key in x.attrs else b_path}")
                    continue
                try:
                    equal = _comparable(ref, x.attrs[key]) == _comparable(cand, y.attrs[key])
                except Exception as e:  # an attribute h5py cannot read
                    diffs.append(f"{name} attribute {key}: cannot compare ({e})")
                    continue
                if not equal:
                    diffs.append(f"{name} attribute {key}: {x.attrs[key]!r} != {y.attrs[key]!r}")
            if not isinstance(x, h5py.Dataset):
                continue
            if name == "/config":
                lx, ly = _config_lines(x), _config_lines(y)
                if lx != ly:
                    extra = [ln for ln in lx if ln not in ly][:3] + [ln for ln in ly if ln not in lx][:3]
                    diffs.append(f"/config: lines other than the placement ones differ: {extra}")
                continue
            if x.dtype != y.dtype or x.shape != y.shape:
                diffs.append(f"{name}: dtype/shape {x.dtype} {x.shape} != {y.dtype} {y.shape}")
                continue
            vx, vy = x[()], y[()]
            if isinstance(vx, np.ndarray) and vx.dtype.kind != "O":
                if vx.tobytes() == vy.tobytes():
                    continue
                if vx.dtype.kind == "f":
                    differ = vx.view(f"u{vx.dtype.itemsize}") != vy.view(f"u{vy.dtype.itemsize}")
                    where = tuple(int(i) for i in np.argwhere(differ)[0])
                    diffs.append(f"{name}: {int(differ.sum())} of {vx.size} values differ (first at {where}: "
                                 f"{vx[where]!r} vs {vy[where]!r})")
                else:
                    diffs.append(f"{name}: contents differ")
            elif _comparable(ref, vx) != _comparable(cand, vy):
                diffs.append(f"{name}: contents differ")
    return diffs


def compare_archives(a_path, b_path):
    """Fails, listing up to 20 differences, unless the two archives are equal as
    archive_differences defines it."""
    diffs = archive_differences(a_path, b_path)
    if diffs:
        more = f"\n  ... and {len(diffs) - 20} more" if len(diffs) > 20 else ""
        fail(f"{b_path} differs from {a_path} ({len(diffs)} differences):\n  " + "\n  ".join(diffs[:20]) + more)


def read_layout(f):
    names = strings(f["model/tensor_name"])
    return names, f["model/tensor_offset"][()], f["model/tensor_shape"][()], f["model/tensor_rank"][()]


def forward(params, layout, x, activation="tanh"):
    """A dense network from the archive's flat layout: kernel [fan_in][fan_out] row-major, then
    bias; linear output."""
    names, offsets, shapes, ranks = layout
    h = x
    tensors = list(zip(names, offsets, shapes, ranks))
    for i in range(0, len(tensors), 2):
        (_, ko, ks, _), (_, bo, bs, _) = tensors[i], tensors[i + 1]
        w = params[ko:ko + ks[0] * ks[1]].reshape(ks[0], ks[1])
        b = params[bo:bo + bs[0]]
        h = h @ w + b
        if i + 2 < len(tensors):
            h = np.tanh(h) if activation == "tanh" else h
    return h


def scaled(f, x):
    """Raw inputs scaled to [-1, 1] with the archive's /data/scaling."""
    lo, hi = f["data/scaling/x_min"][()], f["data/scaling/x_max"][()]
    return 2 * (x - lo) / (hi - lo) - 1


def write_idx(dirname, part, n, rng, gz_images=True):
    """n 28x28 IDX images whose class is readable from the position of a bright square; the
    images gzip-compressed (`gz_images`), the labels plain. Returns the images' path."""
    labels = rng.integers(0, 10, size=n).astype(np.uint8)
    images = rng.integers(0, 40, size=(n, 28, 28)).astype(np.uint8)
    for i, c in enumerate(labels):
        r, col = 2 + 2 * int(c), 4 + int(c)
        images[i, r:r + 6, col:col + 6] = 250
    img = struct.pack(">IIII", 0x803, n, 28, 28) + images.tobytes()
    lab = struct.pack(">II", 0x801, n) + labels.tobytes()
    ipath = os.path.join(dirname, f"{part}-images-idx3-ubyte" + (".gz" if gz_images else ""))
    with (gzip.open if gz_images else open)(ipath, "wb") as f:
        f.write(img)
    with open(os.path.join(dirname, f"{part}-labels-idx1-ubyte"), "wb") as f:
        f.write(lab)
    return ipath


def checkpoint_head(path):
    """(run id, step) of a checkpoint, or ("", -1) when there is none (header: magic 8, format 4,
    size 8, checksum 8; then run id, version and config strings, step)."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        return "", -1
    pos, strings = 28, []
    for _ in range(3):  # run id, version, config
        n = int.from_bytes(data[pos:pos + 8], "little")
        strings.append(data[pos + 8:pos + 8 + n].decode(errors="replace"))
        pos += 8 + n
    return strings[0], int.from_bytes(data[pos:pos + 8], "little", signed=True)


def content_digest(values):
    """The content_fnv1a64 attribute's text for `values` as io::content_digest takes it: FNV-1a 64
    over each value as int64 (integer arrays) or float64 (float arrays), 16 lower-case hex digits
    (what a test that changes a dataset writes, as a run would have)."""
    import numpy as np
    values = np.asarray(values)
    data = values.astype("<i8" if values.dtype.kind in "iu" else "<f8").tobytes()
    h = 14695981039346656037
    for b in data:
        h = ((h ^ b) * 1099511628211) & 0xFFFFFFFFFFFFFFFF
    return f"{h:016x}"


def checkpoint_step(path):
    return checkpoint_head(path)[1]


def checkpoint_wall_seconds(path):
    """The run's wall time up to a checkpoint, over all its segments: the payload's last field
    (io::RunCheckpoint::wall_seconds, a little-endian double)."""
    import struct
    with open(path, "rb") as f:
        f.seek(-8, 2)
        return struct.unpack("<d", f.read(8))[0]


def checkpoint_adam_epoch(path):
    """Adam epochs completed in a checkpoint taken during Adam; -1 once simmering (or none)."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        return -1
    pos = 28
    for _ in range(3):
        pos += 8 + int.from_bytes(data[pos:pos + 8], "little")
    return int.from_bytes(data[pos + 8:pos + 16], "little", signed=True)


def kill_session(proc):
    """SIGKILL every process of the job's session (mpirun and the ranks, which live in their own
    process groups but share the session), then wait until none is left: nothing written after."""
    subprocess.run(["pkill", "-KILL", "-s", str(proc.pid)])
    proc.wait()
    deadline = time.time() + 30
    while subprocess.run(["pgrep", "-s", str(proc.pid)], capture_output=True).returncode == 0:
        if time.time() > deadline:
            fail("processes of the killed job are still alive after 30 s")
        subprocess.run(["pkill", "-KILL", "-s", str(proc.pid)])
        time.sleep(0.05)


def stopped_and_resumed(simmer, args, out, stop_extra, resume_extra, what, at_step=300):
    """`args` with checkpoints every 250 steps and stop polls every 50: run straight on 1 rank;
    run on 2 ranks with `stop_extra` into `out`, stopped by SIGUSR1 at simmering step `at_step`
    (a multiple of 50; exit 3 and a checkpoint at that step expected), resume on 1 rank with
    `resume_extra`; the two archives must agree. The signal is raised by the program itself at
    that step (SIMMER_TEST_SIGNAL_AT), so the stop does not race the run's end on a fast machine;
    tests/mpi/test_resilience.py and the SLURM tests send real signals from outside."""
    args = opts(args, "--run.checkpoint_interval", "250", "--run.sync_every", "50")
    longer = out[:-3] + "_straight.h5"
    run(simmer, 1, args + ["--output", longer])
    run(simmer, 2, args + stop_extra + ["--output", out], expect=3, env={"SIMMER_TEST_SIGNAL_AT": str(at_step)})
    if checkpoint_step(out + ".ckpt") != at_step:
        fail(f"{what} was stopped at step {at_step} but its checkpoint is at step {checkpoint_step(out + '.ckpt')}")
    run(simmer, 1, ["--resume", out] + resume_extra)
    compare_archives(longer, out)


def wait_for(proc, ready, seconds, what):
    """Polls `ready()` every 50 ms until it is true; fails naming `what` (with the job's output)
    when the job `proc` ends first or `seconds` pass."""
    deadline = time.time() + seconds
    while not ready():
        if proc.poll() is not None or time.time() > deadline:
            if proc.poll() is None:
                kill_session(proc)  # a stalled job still running: its output ends only with it
            out = proc.stdout.read() if proc.stdout else ""
            fail(f"the job ended or stalled before {what}:\n{out}")
        time.sleep(0.05)


if __name__ == "__main__":
    # For the shell tests (tests/slurm): simmer_test.py compare REFERENCE CANDIDATE, exit 0 when
    # equal, 1 (with the differences) when not.
    if len(sys.argv) != 4 or sys.argv[1] != "compare":
        print("usage: simmer_test.py compare REFERENCE CANDIDATE", file=sys.stderr)
        sys.exit(2)
    compare_archives(sys.argv[2], sys.argv[3])
    print(f"compare_archives: {sys.argv[3]} equals {sys.argv[2]} (provenance and placement aside)")
