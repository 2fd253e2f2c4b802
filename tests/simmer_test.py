"""Helpers shared by the Python end-to-end tests (run with Debian's /usr/bin/python3, which has
h5py and numpy): running simmer_mpi under mpirun, failing with a message, comparing archives,
and a numpy re-implementation of the archived dense networks."""
import gzip
import os
import struct
import subprocess
import sys
import time

import numpy as np

# OpenMPI refuses root unless told; TERM=dumb keeps progress in plain lines.
ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", TERM="dumb")
# Root attributes that say how a run was carried out, not what it computed (a stopped and
# resumed run has written more checkpoints, so its checkpoint_generation is higher).
PROVENANCE = {"created_at", "command_line", "mpi_ranks", "wall_seconds", "io_transfers",
              "io_collective_transfers", "run_id", "checkpoint_generation"}


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def run(simmer, ranks, args, expect=0, timeout=600):
    """simmer_mpi on `ranks` ranks; fails unless it exits with `expect` (None: any code)."""
    cmd = ["mpirun", "--oversubscribe", "-n", str(ranks), simmer] + list(args)
    p = subprocess.run(cmd, env=ENV, capture_output=True, text=True, timeout=timeout)
    if expect is not None and p.returncode != expect:
        fail(f"{' '.join(cmd)} exited {p.returncode} (expected {expect})\n{p.stdout}\n{p.stderr}")
    return p


def opts(base, *pairs):
    """`base` with `--key value` pairs replaced or added (simmer_mpi refuses a repeated option)."""
    out = list(base)
    for key, value in zip(pairs[0::2], pairs[1::2]):
        if key in out:
            out[out.index(key) + 1] = value
        else:
            out += [key, value]
    return out


def same(u, v):
    """Equal values, NaN equal to NaN (a score that does not apply is NaN in both)."""
    u, v = np.asarray(u), np.asarray(v)
    try:
        return np.array_equal(u, v, equal_nan=True)
    except TypeError:  # text
        return np.array_equal(u, v)


def compare_archives(a_path, b_path):
    """Fails unless the two archives hold the same objects, attributes and bytes (provenance
    and /config's own output line aside)."""
    import h5py
    with h5py.File(a_path, "r") as a, h5py.File(b_path, "r") as b:
        oa, ob = {}, {}
        a.visititems(lambda n, o: oa.__setitem__(n, o))
        b.visititems(lambda n, o: ob.__setitem__(n, o))
        if sorted(oa) != sorted(ob):
            fail(f"{a_path} and {b_path} hold different objects")
        for name, obj in oa.items():
            other = ob[name]
            ignored = {"DIMENSION_LIST", "REFERENCE_LIST", "run_id"}
            if set(obj.attrs) - ignored != set(other.attrs) - ignored:
                fail(f"/{name} has attributes {sorted(set(obj.attrs) ^ set(other.attrs))} in only one of "
                     f"{a_path} and {b_path}")
            for k, v in obj.attrs.items():
                if k not in ("DIMENSION_LIST", "REFERENCE_LIST", "run_id") and not same(v, other.attrs[k]):
                    fail(f"attribute {name}@{k} differs")
            if name == "config":
                # Placement, not science: where the archive is and how many ranks share a gradient.
                strip = lambda t: [l for l in t.decode().splitlines()
                                   if not l.startswith(("output", "ranks_per_trajectory"))]
                if strip(obj[0]) != strip(other[0]):
                    fail("/config differs beyond run.output and run.ranks_per_trajectory")
                continue
            if hasattr(obj, "shape") and obj[()].tobytes() != other[()].tobytes():
                fail(f"dataset /{name} differs between {a_path} and {b_path}")
        if set(a.attrs) - PROVENANCE != set(b.attrs) - PROVENANCE:
            fail(f"root attributes {sorted((set(a.attrs) ^ set(b.attrs)) - PROVENANCE)} are in only one archive")
        for k, v in a.attrs.items():
            if k not in PROVENANCE and not same(v, b.attrs[k]):
                fail(f"root attribute {k} differs")


def read_layout(f):
    names = [n.decode() if isinstance(n, bytes) else n for n in f["model/tensor_name"][()]]
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


def checkpoint_step(path):
    return checkpoint_head(path)[1]


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
    proc = subprocess.run(["mpirun", "--oversubscribe", "-n", "2", simmer] + args + stop_extra + ["--output", out],
                          env=dict(ENV, SIMMER_TEST_SIGNAL_AT=str(at_step)), stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, timeout=600)
    if proc.returncode != 3:
        fail(f"{what}, stopped, exited {proc.returncode}, expected 3:\n{proc.stdout[-2000:]}")
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
            out = proc.stdout.read() if proc.stdout else ""
            fail(f"the job ended or stalled before {what}:\n{out}")
        time.sleep(0.05)
