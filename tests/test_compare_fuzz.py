"""Bad model files by the hundred: `repdist compare` given a good model and a malformed one
(truncated or empty files, wrong dtypes, string columns, NaN/inf, mismatched N or K, f and g
of different M, arrays of the wrong rank, huge declared shapes; another width M is no fault)
exits 2 with a message naming the malformed file and writes nothing; never a traceback."""

import contextlib
import io

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from repdist.cli import main
from repdist.io.representations import embeddings_frame, unembeddings_frame

N, K, M = 60, 6, 2


def good(rng, n=N, k=K, m=M):
    return rng.normal(size=(n, m)), rng.normal(size=(k, m))


def npz(path, **arrays):
    np.savez(path, **arrays)
    return path


def folder(path, f, g, mangle=None):
    path.mkdir()
    frame = embeddings_frame(f, np.zeros(len(f)), np.zeros(len(f)))
    if mangle is not None:
        frame = mangle(frame)
    frame.to_parquet(path / "embeddings.parquet")
    unembeddings_frame(g).to_parquet(path / "unembeddings.parquet")
    return path


def huge_npy_header(path, rng):
    """An .npy inside an .npz whose header declares 10^12 rows but holds a few bytes."""
    np.savez(path, f=np.zeros((2, M)), g=good(rng)[1])
    import zipfile

    with zipfile.ZipFile(path, "w") as zf:
        header = np.lib.format.header_data_from_array_1_0(np.zeros((2, M)))
        header["shape"] = (10**12, M)
        buf = io.BytesIO()
        np.lib.format.write_array_header_1_0(buf, header)
        zf.writestr("f.npy", buf.getvalue() + b"\0" * 32)
        buf = io.BytesIO()
        np.save(buf, good(rng)[1])
        zf.writestr("g.npy", buf.getvalue())
    return path


def truncated(path, rng):
    f, g = good(rng)
    whole = npz(path.with_suffix(".tmp.npz"), f=f, g=g).read_bytes()
    path.write_bytes(whole[: rng.integers(0, len(whole))])
    return path


MALFORMED = {
    "truncated npz": lambda p, r: truncated(p.with_suffix(".npz"), r),
    "empty npz": lambda p, r: (p.with_suffix(".npz").write_bytes(b""), p.with_suffix(".npz"))[1],
    "empty pt": lambda p, r: (p.with_suffix(".pt").write_bytes(b""), p.with_suffix(".pt"))[1],
    "no g": lambda p, r: npz(p.with_suffix(".npz"), f=good(r)[0]),
    "string array": lambda p, r: npz(p.with_suffix(".npz"), f=np.full((N, M), "a"),
                                     g=good(r)[1]),
    "NaN in f": lambda p, r: npz(p.with_suffix(".npz"), f=np.where(r.random((N, M)) < 0.05,
                                                                   np.nan, 1.0), g=good(r)[1]),
    "inf in g": lambda p, r: npz(p.with_suffix(".npz"), f=good(r)[0],
                                 g=np.full((K, M), np.inf)),
    "other N": lambda p, r: npz(p.with_suffix(".npz"), f=good(r, n=N - 1)[0], g=good(r)[1]),
    "other K": lambda p, r: npz(p.with_suffix(".npz"), f=good(r)[0], g=good(r, k=K + 1)[1]),
    "M of f and g differ": lambda p, r: npz(p.with_suffix(".npz"), f=good(r)[0],
                                            g=good(r, m=M + 1)[1]),
    "1-D f": lambda p, r: npz(p.with_suffix(".npz"), f=np.ones(N), g=good(r)[1]),
    "3-D f": lambda p, r: npz(p.with_suffix(".npz"), f=np.ones((N, M, 2)), g=good(r)[1]),
    "empty f": lambda p, r: npz(p.with_suffix(".npz"), f=np.ones((0, M)), g=good(r)[1]),
    "huge declared shape": lambda p, r: huge_npy_header(p.with_suffix(".npz"), r),
    "string column": lambda p, r: folder(p, *good(r), lambda fr: fr.assign(f_0="x")),
    "no f columns": lambda p, r: folder(p, *good(r), lambda fr: fr.drop(columns=["f_0", "f_1"])),
    "truncated parquet": lambda p, r: _truncate(folder(p, *good(r)) / "embeddings.parquet", r),
    "folder without tables": lambda p, r: (p.mkdir(), p)[1],
    "unknown suffix": lambda p, r: (p.with_suffix(".h5").write_bytes(b"x"),
                                    p.with_suffix(".h5"))[1],
}


def _truncate(path, rng):
    whole = path.read_bytes()
    path.write_bytes(whole[: rng.integers(0, len(whole) - 1)])
    return path.parent


@settings(max_examples=500, derandomize=True, deadline=None, database=None,
          suppress_health_check=list(HealthCheck))
@given(st.sampled_from(sorted(MALFORMED)), st.integers(0, 2**32 - 1), st.booleans())
def test_a_malformed_model_file_exits_2_naming_it(tmp_path_factory, kind, seed, first):
    rng = np.random.default_rng(seed)
    work = tmp_path_factory.mktemp("bad")
    ok = npz(work / "good.npz", **dict(zip("fg", good(rng), strict=True)))
    bad = MALFORMED[kind](work / "bad", rng)
    out = work / "pairs.parquet"
    stderr = io.StringIO()
    models = [bad, ok] if first else [ok, bad]
    with contextlib.redirect_stderr(stderr), contextlib.redirect_stdout(io.StringIO()):
        status = main(["compare", *map(str, models), "-o", str(out), "--num-samples", "5"])
    message = stderr.getvalue()
    assert status == 2, (kind, message)
    assert str(bad) in message or str(bad.name) in message, (kind, message)
    assert not out.exists()
