#!/usr/bin/python3
"""Bit-for-bit comparison of two simmer archives (a resumed run against an uninterrupted one).

Usage: compare_archives.py REFERENCE CANDIDATE

Equal means:
  - the same groups and datasets; every dataset with the same dtype, shape and bytes, except /config;
  - /config: the same lines, except the `output = ...` line (the archive's own path);
  - the same attributes on every group and dataset (object references compared by the names they
    point to), except the root's provenance attributes: created_at, command_line, mpi_ranks,
    wall_seconds, status, run_id, checkpoint_generation and io_* (run_id also on /config: every run
    has its own; a resumed run has written more checkpoints).
Prints what differs (up to 20 items) and exits 1; prints a summary and exits 0 when equal; exits 2
on usage errors or when h5py is missing. Needs h5py: run it with /usr/bin/python3 here.
"""
import sys
import warnings

try:
    import h5py
    import numpy as np
except ImportError as e:  # pragma: no cover
    print(f"compare_archives: {e} (run with /usr/bin/python3, which has h5py)", file=sys.stderr)
    sys.exit(2)

ROOT_PROVENANCE = {"created_at", "command_line", "mpi_ranks", "wall_seconds", "status", "run_id",
                   "checkpoint_generation"}


def provenance(name):
    return name in ROOT_PROVENANCE or name.startswith("io_")


def config_lines(ds):
    v = ds[()]
    if isinstance(v, np.ndarray):
        v = v.reshape(-1)
        v = b"".join(x if isinstance(x, bytes) else str(x).encode() for x in v)
    if isinstance(v, bytes):
        v = v.decode("utf-8", "replace")
    return [ln.rstrip() for ln in str(v).rstrip("\x00").splitlines()]


def normalise_attr(f, value):
    """Attribute value in a comparable form: object references become the names they point to."""
    if isinstance(value, h5py.Reference):
        return ("ref", f[value].name if value else None)
    if isinstance(value, np.ndarray):
        if value.dtype.kind == "O" or value.dtype.names is not None:
            return ("array", value.shape, [normalise_attr(f, x) for x in value.reshape(-1).tolist()])
        return ("array", value.dtype.str, value.shape, value.tobytes())
    if isinstance(value, (tuple, list)):
        return tuple(normalise_attr(f, x) for x in value)
    if isinstance(value, np.void):
        return tuple(normalise_attr(f, x) for x in value.tolist())
    if isinstance(value, np.generic):
        return (value.dtype.str, value.tobytes())
    return value


def main():
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    ref_path, cand_path = sys.argv[1:3]
    diffs = []

    with h5py.File(ref_path, "r") as ref, h5py.File(cand_path, "r") as cand:
        def objects(f):
            out = {"/": f}
            f.visititems(lambda name, obj: out.__setitem__("/" + name, obj))
            return out

        a, b = objects(ref), objects(cand)
        for name in sorted(set(a) - set(b)):
            diffs.append(f"{name}: only in the reference")
        for name in sorted(set(b) - set(a)):
            diffs.append(f"{name}: only in the candidate")

        datasets = 0
        for name in sorted(set(a) & set(b)):
            x, y = a[name], b[name]
            if isinstance(x, h5py.Dataset) != isinstance(y, h5py.Dataset):
                diffs.append(f"{name}: a dataset in one archive, a group in the other")
                continue
            # Attributes.
            for key in sorted(set(x.attrs) | set(y.attrs)):
                if (name == "/" and provenance(key)) or key == "run_id":  # each run its own id
                    continue
                if key not in x.attrs or key not in y.attrs:
                    diffs.append(f"{name} attribute {key}: only in the "
                                 f"{'reference' if key in x.attrs else 'candidate'}")
                    continue
                try:
                    same = normalise_attr(ref, x.attrs[key]) == normalise_attr(cand, y.attrs[key])
                except Exception as e:  # an attribute h5py cannot read
                    diffs.append(f"{name} attribute {key}: cannot compare ({e})")
                    continue
                if not same:
                    diffs.append(f"{name} attribute {key}: {x.attrs[key]!r} != {y.attrs[key]!r}")
            if not isinstance(x, h5py.Dataset):
                continue
            datasets += 1
            if name == "/config":
                lx = [ln for ln in config_lines(x) if not ln.lstrip().startswith("output =")]
                ly = [ln for ln in config_lines(y) if not ln.lstrip().startswith("output =")]
                if lx != ly:
                    extra = [ln for ln in lx if ln not in ly][:3] + [ln for ln in ly if ln not in lx][:3]
                    diffs.append(f"/config: lines other than 'output = ...' differ: {extra}")
                continue
            if x.dtype != y.dtype or x.shape != y.shape:
                diffs.append(f"{name}: dtype/shape {x.dtype} {x.shape} != {y.dtype} {y.shape}")
                continue
            vx, vy = x[()], y[()]
            if isinstance(vx, np.ndarray) and vx.dtype.kind != "O":
                if vx.tobytes() == vy.tobytes():
                    continue
                if vx.dtype.kind == "f":
                    # Bitwise, so NaNs with the same payload count as equal.
                    diff = vx.view(f"u{vx.dtype.itemsize}") != vy.view(f"u{vy.dtype.itemsize}")
                    where = tuple(np.argwhere(diff)[0])
                    with np.errstate(invalid="ignore"), warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        worst = np.nanmax(np.abs(vx - vy))
                    diffs.append(f"{name}: {int(diff.sum())} of {vx.size} values differ (first at "
                                 f"{where}: {vx[where]!r} vs {vy[where]!r}; max |diff| {worst!r})")
                else:
                    diffs.append(f"{name}: contents differ")
            elif normalise_attr(ref, vx) != normalise_attr(cand, vy):
                diffs.append(f"{name}: contents differ")

    if diffs:
        print(f"compare_archives: {cand_path} differs from {ref_path} ({len(diffs)} differences):")
        for d in diffs[:20]:
            print(f"  {d}")
        if len(diffs) > 20:
            print(f"  ... and {len(diffs) - 20} more")
        return 1
    print(f"compare_archives: {cand_path} equals {ref_path} bit for bit ({datasets} datasets; "
          f"/config equal except its output line; root provenance attributes ignored)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
