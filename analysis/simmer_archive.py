"""Reading simmer archives for the figure scripts (ARCHITECTURE.md, "Archive layout").

Reads what simmer_mpi wrote; where a figure needs the networks on inputs the run did not
evaluate (a grid over the training range, when the run had no --ensemble.points), it asks
`simmer_analyze predict` (predict_grid), never Python, to evaluate them. Anything a figure needs and
the archive lacks raises ArchiveError with a one-line message that names the file, the missing
object and, where it exists, the simmer_mpi option that would have written it. `run_main` turns
that into `script: error: ...` on stderr and exit code 1.
"""
import argparse
import configparser
import csv
import os
import shutil
import subprocess
import sys
import tempfile

import h5py
import numpy as np
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (after the backend is chosen)

# Class colours for the decision map and bars (Okabe–Ito-like, distinct when mixed by vote share).
CLASS_COLOURS = np.array([[0.84, 0.19, 0.15],   # red
                          [0.17, 0.63, 0.17],   # green
                          [0.16, 0.38, 0.82],   # blue
                          [0.93, 0.62, 0.05],   # orange
                          [0.55, 0.30, 0.70],   # purple
                          [0.10, 0.70, 0.75]])  # teal
TRAIN_COLOUR = "#1f77b4"
TEST_COLOUR = "#d95f02"
ENSEMBLE_COLOUR = "#d95f02"
ADAM_COLOUR = "#1f77b4"
TEMPERATURE_COLOUR = "#444444"


class ArchiveError(Exception):
    """The archive cannot give what a figure needs; the message names the file."""


def _text(value):
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, np.ndarray) and value.shape == ():
        return _text(value[()])
    return str(value)


def strings(ds):
    """A string dataset as a list of str: a character array [n, width] (netCDF's NC_CHAR, archive
    format 2) or n fixed-length strings (format 1)."""
    v = ds[()]
    if v.dtype.kind == "S" and v.dtype.itemsize == 1 and v.ndim == 2:
        return [row.tobytes().decode("utf-8", "replace").rstrip("\x00") for row in v]
    return [_text(x).rstrip("\x00") for x in np.atleast_1d(v)]


class Archive:
    """A simmer archive opened read-only, with the accessors the figures share."""

    def __init__(self, path):
        self.path = path
        if not os.path.exists(path):
            raise ArchiveError(f"{path}: no such file")
        try:
            self.file = h5py.File(path, "r")
        except OSError as e:
            raise ArchiveError(f"{path}: not a readable HDF5 archive ({e})") from None
        if "config" not in self.file and "trace" not in self.file and "ensemble" not in self.file:
            raise ArchiveError(f"{path}: not a simmer archive (no /config, /trace or /ensemble)")
        self._config = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.file.close()

    # ---- generic access -------------------------------------------------------------------
    def has(self, name):
        return name.lstrip("/") in self.file

    def require(self, name, purpose, hint=None):
        """The dataset `name` as a numpy array, or ArchiveError naming file, object and purpose."""
        if not self.has(name):
            msg = f"{self.path}: lacks /{name.lstrip('/')} (needed for {purpose})"
            if hint:
                msg += f"; {hint}"
            raise ArchiveError(msg)
        obj = self.file[name.lstrip("/")]
        if not isinstance(obj, h5py.Dataset):
            raise ArchiveError(f"{self.path}: /{name.lstrip('/')} is not a dataset (needed for {purpose})")
        return obj[()]

    def attr(self, name, group="/", default=None):
        group = group.strip("/")
        if group and not self.has(group):
            return default
        obj = self.file[group] if group else self.file
        if name not in obj.attrs:
            return default
        value = obj.attrs[name]
        if isinstance(value, (bytes, np.bytes_, str)):
            return _text(value)
        if isinstance(value, np.ndarray) and value.shape == ():
            return value[()]
        return value

    def require_attr(self, name, group, purpose):
        value = self.attr(name, group)
        if value is None:
            raise ArchiveError(f"{self.path}: lacks attribute {name} of {group} (needed for {purpose})")
        return value

    def strings(self, name):
        if not self.has(name):
            return []
        return strings(self.file[name.lstrip("/")])

    # ---- what the run was -----------------------------------------------------------------
    @property
    def config(self):
        """The effective configuration (/config INI text) as {"section.key": "value"}."""
        if self._config is None:
            self._config = {}
            if self.has("config"):
                text = strings(self.file["config"])[0]
                parser = configparser.ConfigParser(interpolation=None, strict=False)
                parser.optionxform = str
                try:
                    parser.read_string(text)
                except configparser.Error as e:
                    raise ArchiveError(f"{self.path}: /config is not readable INI text ({e})") from None
                for section in parser.sections():
                    for key, value in parser.items(section):
                        self._config[f"{section}.{key}"] = value.strip()
        return self._config

    @property
    def task(self):
        task = self.attr("task") or self.config.get("data.task")
        if task is None:
            raise ArchiveError(f"{self.path}: lacks the root attribute task (classification or regression)")
        return task

    @property
    def mode(self):
        return self.attr("mode") or self.config.get("simmer.mode", "retrofit")

    @property
    def name(self):
        """Label of the run: the archive's file name without extension."""
        return os.path.splitext(os.path.basename(self.path))[0]

    def describe(self):
        """One line for a figure title: file, mode, network, number of chains."""
        parts = [self.name, {"abinitio": "ab initio"}.get(self.mode, self.mode)]
        arch = self.attr("architecture", "model") or self.config.get("model.architecture")
        if arch:
            parts.append(arch)
        chains = self.attr("trajectories")
        if chains is not None:
            parts.append(f"{int(chains)} chain{'s' if int(chains) != 1 else ''}")
        return ", ".join(parts)

    def feature_names(self):
        names = self.strings("data/feature_names")
        return names

    def class_names(self):
        return self.strings("data/class_names")

    def require_task(self, task, figure):
        if self.task != task:
            raise ArchiveError(f"{self.path}: holds a {self.task} run; {figure} needs a {task} run")

    def baseline_label(self):
        """What /baseline holds: Adam's end point (retrofit) or the first member (ab initio)."""
        return "Adam" if self.mode == "retrofit" else "first member"

    def chosen_rung(self):
        """A temperature ladder's rung that is the run's ensemble: (k, name, parallel), or None (no
        ladder, or the deep ensemble chosen)."""
        ladder = [t for t in self.config.get("simmer.ladder", "").split(",") if t.strip()]
        name = self.attr("ensemble", "metrics")
        if len(ladder) < 2 or not name or not str(name).startswith("rung_"):
            return None
        return int(str(name)[5:]), str(name), self.config.get("simmer.ladder_mode", "sequential") == "parallel"

    def set_size(self, name):
        return self.file[f"data/{name}/y"].shape[0] if self.has(f"data/{name}/y") else None


# ---- regression's predictive law (docs/ANALYZE.md, "Predictive intervals") ------------------------
class Predictive:
    """An ensemble's predictive mixture on one set, as the run archived it: per value the mixture
    Σ_c w_c N(mean_c, variance_c + σ²) over the components c (one per trajectory: its members'
    count w_c, mean and variance; the deep ensemble: one per Adam end point), σ² per output."""

    def __init__(self, ar, group, set_name, purpose):
        g = f"{group.strip('/')}/{set_name}"
        hint = "the archive predates issue 26 or its run did not finish"
        self.weight = np.asarray(ar.require(f"{g}/trajectory_members", purpose, hint), dtype=float)
        self.mean = np.asarray(ar.require(f"{g}/trajectory_mean", purpose, hint), dtype=float)
        self.variance = np.asarray(ar.require(f"{g}/trajectory_variance", purpose, hint), dtype=float)
        noise = f"{group.strip('/')}/noise_variance"
        self.noise = np.asarray(ar.require(noise, purpose, hint), dtype=float).reshape(-1)
        self.source = _text(ar.file[noise].attrs.get("noise_source", b"training"))
        keep = self.weight > 0
        self.weight, self.mean, self.variance = self.weight[keep], self.mean[keep], self.variance[keep]
        self.weight = self.weight / self.weight.sum()

    def _sd(self):
        return np.sqrt(self.variance + self.noise)  # [component, row, output]

    def cdf(self, y):
        """F(y) per value of y [row, output]: where the truth falls (its probability integral transform)."""
        from scipy.stats import norm
        z = (np.asarray(y, dtype=float)[None] - self.mean) / self._sd()
        return np.tensordot(self.weight, norm.cdf(z), axes=1)

    def quantile(self, level, iterations=200):
        """The mixture's `level` quantile per value [row, output], by bisection."""
        sd = self._sd()
        lo, hi = (self.mean - 40 * sd).min(axis=0), (self.mean + 40 * sd).max(axis=0)
        for _ in range(iterations):
            mid = 0.5 * (lo + hi)
            below = self.cdf(mid) < level
            lo, hi = np.where(below, mid, lo), np.where(below, hi, mid)
        return 0.5 * (lo + hi)

    def sd(self):
        """Total predictive sd and the members' spread (model) per value."""
        m = np.tensordot(self.weight, self.mean, axes=1)
        model = np.tensordot(self.weight, self.variance + (self.mean - m) ** 2, axes=1)
        return np.sqrt(model + self.noise), np.sqrt(model)


def central_coverage(pit, levels):
    """Observed coverage of the central `levels` intervals: the share of transforms in [(1−q)/2, (1+q)/2]."""
    pit = np.asarray(pit, dtype=float).reshape(-1)
    return np.array([np.mean((pit >= (1 - q) / 2) & (pit <= (1 + q) / 2)) for q in levels])


# ---- the networks on a grid (simmer_analyze predict) --------------------------------------------
def analyze_binary(explicit=None):
    """simmer_analyze: --analyze, $SIMMER_ANALYZE, on PATH, or the checkout's build/src."""
    here = os.path.dirname(os.path.abspath(__file__))
    for candidate in (explicit, os.environ.get("SIMMER_ANALYZE"), shutil.which("simmer_analyze"),
                      os.path.join(here, "..", "build", "src", "simmer_analyze")):
        if candidate and os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    raise ArchiveError("simmer_analyze not found (needed to evaluate the networks on a grid): pass --analyze "
                       "PATH, set SIMMER_ANALYZE, or put it on PATH")


def training_grid(x, points, widen=0.1):
    """A regular grid over the training inputs' range widened by `widen` of it on each side: `points`
    values for one feature, a sqrt(points) x sqrt(points) lattice for two."""
    x = np.asarray(x, dtype=float)
    lo, hi = x.min(axis=0), x.max(axis=0)
    pad = widen * np.where(hi > lo, hi - lo, 1.0)
    lo, hi = lo - pad, hi + pad
    if x.shape[1] == 1:
        return np.linspace(lo[0], hi[0], points)[:, None]
    side = max(int(round(np.sqrt(points))), 2)
    gx, gy = np.meshgrid(np.linspace(lo[0], hi[0], side), np.linspace(lo[1], hi[1], side))
    return np.column_stack([gx.ravel(), gy.ravel()])


def predict_grid(archive, grid, features, analyze=None, quantiles="0.025,0.975"):
    """simmer_analyze predict of the run's ensemble on the rows of `grid` (raw units, columns
    `features`): {column: array} of its output (numbers as float, class names as str)."""
    binary = analyze_binary(analyze)
    with tempfile.TemporaryDirectory() as d:
        points, out = os.path.join(d, "grid.csv"), os.path.join(d, "predicted.csv")
        with open(points, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(features)
            w.writerows([[repr(float(v)) for v in row] for row in grid])
        done = subprocess.run([binary, "predict", archive, "--points", points, "--out", out, "--quantiles", quantiles,
                               "--digits", "17"], capture_output=True, text=True)
        if done.returncode != 0:
            last = (done.stderr.strip().splitlines() or ["(no message)"])[-1]
            raise ArchiveError(f"{archive}: simmer_analyze predict on the grid failed: {last}")
        with open(out, newline="") as f:
            rows = list(csv.DictReader(f))
    columns = {}
    for name in rows[0].keys() if rows else []:
        values = [r[name] for r in rows]
        try:
            columns[name] = np.array([float(v) for v in values])
        except ValueError:
            columns[name] = np.array(values)
    return columns


# ---- command-line and output helpers ----------------------------------------------------------
def parser(description, epilog=None):
    return argparse.ArgumentParser(description=description, epilog=epilog,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)


def add_output_arguments(p, default_suffix):
    p.add_argument("-o", "--output", metavar="PREFIX",
                   help=f"write PREFIX.png and PREFIX.pdf (default: <archive name>_{default_suffix} "
                        "in the current directory)")
    p.add_argument("--dpi", type=float, default=150, help="resolution of the PNG (default 150)")
    p.add_argument("--palette", action="store_true",
                   help="write the PNG with a 256-colour palette (a third of the size; for README figures)")


def output_prefix(args, archive_path, suffix):
    prefix = args.output
    if not prefix:
        prefix = os.path.splitext(os.path.basename(archive_path))[0] + "_" + suffix
    root, ext = os.path.splitext(prefix)
    if ext.lower() in (".png", ".pdf"):
        prefix = root
    return prefix


def save(fig, prefix, args):
    """Write PREFIX.png and PREFIX.pdf (args.dpi, args.palette); returns their paths."""
    directory = os.path.dirname(prefix)
    if directory:
        os.makedirs(directory, exist_ok=True)
    paths = [prefix + ".png", prefix + ".pdf"]
    fig.savefig(paths[0], dpi=args.dpi)
    fig.savefig(paths[1])
    plt.close(fig)
    if getattr(args, "palette", False):
        try:
            from PIL import Image
        except ImportError:
            print("note: --palette needs PIL (python3-pil); the PNG keeps full colour", file=sys.stderr)
        else:
            with Image.open(paths[0]) as image:
                rgb = image.convert("RGB")
            rgb.quantize(colors=256, method=Image.Quantize.MEDIANCUT,
                         dither=Image.Dither.NONE).save(paths[0], optimize=True)
    return paths


def run_main(main):
    """Run a figure's main: archive problems become one line on stderr and exit code 1."""
    prog = os.path.basename(sys.argv[0])
    try:
        paths = main()
    except ArchiveError as e:
        print(f"{prog}: error: {e}", file=sys.stderr)
        sys.exit(1)
    for path in paths or []:
        print(path)
    sys.exit(0)
