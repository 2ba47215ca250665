"""The authors' checkpoints: names, format (CUDA-saved files included), checksums, our
initialisation against theirs, extraction and the per-seed comparison. Tests write their own
files in the authors' format: a user's clone has no copy of the authors' files."""

import hashlib
import io
import zipfile

import numpy as np
import pandas as pd
import pytest
import torch

from repdist.models.authors import (
    AuthorsCheckpointError,
    checkpoint_name,
    load_state_dict,
    load_synthetic_model,
    parse_name,
    read_checksums,
    synthetic_name,
    verify,
    write_checksums,
)
from repdist.models.authors import CHECKSUMS
from repdist.experiments.outputs import SeedFiles
from repdist.io import file_digest as sha256sum
from repdist.io.download import ChecksumError, DownloadError
from repdist.experiments.authors.checkpoints import extract_synthetic, initialisation_table
from repdist.experiments.authors.ours_vs_authors import ours_vs_authors, ours_vs_authors_markdown
from repdist.models.mlp import build_synthetic_model


def state_digest(state):
    """sha256 of a state dict's keys, dtypes, shapes and tensor bytes, in order: equal digests
    mean bit-identical weights, whatever file format or device they were saved from."""
    digest = hashlib.sha256()
    for key, tensor in state.items():
        t = tensor.detach().cpu().contiguous()
        digest.update(f"{key}|{t.dtype}|{tuple(t.shape)}|".encode())
        digest.update(t.numpy().tobytes())
    return digest.hexdigest()

# sha256 (state_digest) of the authors' untrained 4-class checkpoints (2025-04-22, commit
# b7a002c), computed from their files: (seed, width) -> digest. Our initialisation must match
# bit for bit (spec §3.2).
AUTHORS_K4_INIT = {
    (0, 16): "7c5f1df2a4d2ba5eca0406c72347f6f214878b3a71761a1abf1fc61dd90b4765",
    (1, 16): "4a1ee0e52dd6b1a9d03d9faa078eb9a7a31800449b5e617d0158c379952e2574",
    (2, 16): "856cba705f983397624b091424fe159070db219e0edcc2d0ffc34640d1004dd1",
    (3, 16): "096be0bcecd1fb5457c251a1b90f2d919eec5ef8da13696caa66fd29ecdec519",
    (4, 16): "7852aeb3abc490d906ec3dd11d20a641e71bb2ae441aebf9c29badff2012da77",
    (0, 64): "9fc0821b580b4ffe28f232780153eee4aa94bb7ae01eb299049b831fc235eddc",
    (4, 128): "e267df6987e07acc79fac0b20d1260eeb1d2fec1d934b1ec28363a7d075f1583",
}


def test_names_round_trip():
    trained = ("2025-04-22trained_radial_classification_SmallMLP_classes4_seed3_features64_fd2_"
               "data20000_lr0_0001_steps15000")
    untrained = "2024-12-06untrained_radial_classification_SmallMLP_classes6_seed0_features16_fd2"
    fixed = ("2024-12-06trained_radial_classification_SmallMLP_fixf20_fixg20_classes10_seed7_"
             "features32_fd2_data20000_lr0_0001_steps15000")
    for name in (trained, untrained, fixed):
        assert checkpoint_name(parse_name(name)) == name
    n = parse_name(fixed)
    assert (n.num_classes, n.seed, n.width, n.fix_f, n.fix_g, n.steps) == (10, 7, 32, 20, 20, 15000)
    assert str(synthetic_name(4, 3, 64)) == trained
    assert str(synthetic_name(6, 0, 16, trained=False)) == untrained
    with pytest.raises(AuthorsCheckpointError, match="not an authors' checkpoint name"):
        parse_name("model.pt")


@pytest.mark.parametrize("seed, width", sorted(AUTHORS_K4_INIT))
def test_our_initialisation_is_the_authors_bit_for_bit(tmp_path, seed, width):
    """torch.manual_seed(s), then f, then g: the authors' untrained 4-class weights exactly.
    Written in their format and read back through the reader, the digest is unchanged."""
    model = build_synthetic_model(seed, 4, width, 2, 0.0, 0.0)
    assert state_digest(model.state_dict()) == AUTHORS_K4_INIT[(seed, width)]
    path = tmp_path / str(synthetic_name(4, seed, width, trained=False))
    torch.save(model.state_dict(), path)
    assert state_digest(load_state_dict(path)) == AUTHORS_K4_INIT[(seed, width)]
    other = build_synthetic_model(seed + 1, 4, width, 2, 0.0, 0.0)
    assert state_digest(other.state_dict()) != AUTHORS_K4_INIT[(seed, width)]


def _as_cuda_file(path):
    """Rewrite a torch.save file so its storages say 'cuda:0', as the authors' 2025-04-22
    trained files do (made on a machine without a GPU: only the location tag changes)."""
    src = zipfile.ZipFile(path)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_STORED) as dst:
        for info in src.infolist():
            data = src.read(info)
            if info.filename.endswith("data.pkl"):
                assert b"X\x03\x00\x00\x00cpu" in data
                data = data.replace(b"X\x03\x00\x00\x00cpu", b"X\x06\x00\x00\x00cuda:0")
            dst.writestr(info, data)
    src.close()
    path.write_bytes(buf.getvalue())


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without CUDA")
def test_cuda_saved_checkpoints_load_on_the_cpu(tmp_path):
    model = build_synthetic_model(2, 4, 16, 2, 0.0, 0.0)
    path = tmp_path / str(synthetic_name(4, 2, 16))
    torch.save(model.state_dict(), path)
    _as_cuda_file(path)
    with pytest.raises(RuntimeError, match="CUDA"):
        torch.load(path, weights_only=True)  # really a CUDA-tagged file
    loaded = load_synthetic_model(path)
    assert state_digest(loaded.state_dict()) == state_digest(model.state_dict())


def test_unreadable_and_mismatched_files_are_refused(tmp_path):
    path = tmp_path / str(synthetic_name(4, 0, 16))
    path.write_bytes(b"not a checkpoint")
    with pytest.raises(AuthorsCheckpointError, match="cannot be read"):
        load_synthetic_model(path)
    torch.save({"f_net.l1.weight": torch.zeros(16, 2)}, path)
    with pytest.raises(AuthorsCheckpointError, match="keys"):
        load_synthetic_model(path)
    with pytest.raises(AuthorsCheckpointError, match="not in the checksum list"):
        verify(path, {})
    with pytest.raises(ChecksumError, match="does not match the published"):
        verify(path, {path.name: "0" * 64})
    verify(path, {path.name: sha256sum(path)})


def test_the_committed_checksum_list_covers_the_authors_files():
    """40 trained and 36 untrained files of commit b7a002c: every name parses."""
    sums = read_checksums(CHECKSUMS)
    names = [parse_name(n) for n in sums]
    assert len(sums) == 76 and sum(n.trained for n in names) == 40
    assert {n.num_classes for n in names} == {4, 6}
    assert all(len(d) == 64 for d in sums.values())


@pytest.fixture
def authors_folder(tmp_path):
    """Three seeds of K = 4, width 16 in the authors' format: untrained = our init, trained =
    our init nudged (a stand-in for their trained weights)."""
    folder = tmp_path / "authors"
    folder.mkdir()
    for seed in range(3):
        model = build_synthetic_model(seed, 4, 16, 2, 0.0, 0.0)
        torch.save(model.state_dict(), folder / str(synthetic_name(4, seed, 16, trained=False)))
        with torch.no_grad():
            for p in model.parameters():
                p.add_(0.05 * torch.randn_like(p, generator=torch.Generator().manual_seed(seed)))
        torch.save(model.state_dict(), folder / str(synthetic_name(4, seed, 16)))
    write_checksums(folder / "SHA256SUMS.tsv", {p.name: sha256sum(p) for p in folder.iterdir()
                                                if p.name != "SHA256SUMS.tsv"})
    return folder


def test_initialisation_table_finds_exact_and_inexact_files(authors_folder):
    sums = read_checksums(authors_folder / "SHA256SUMS.tsv")
    untrained = sorted(p for p in authors_folder.iterdir() if "untrained" in p.name)
    table = initialisation_table(untrained, sums)
    assert table["bit_exact"].all() and (table["max_abs_diff"] == 0).all()
    model = build_synthetic_model(9, 4, 16, 2, 0.0, 0.0)  # another seed's weights
    torch.save(model.state_dict(), untrained[0])
    sums[untrained[0].name] = sha256sum(untrained[0])
    table = initialisation_table(untrained, sums)
    assert not table["bit_exact"].iloc[0] and table["max_abs_diff"].iloc[0] > 0


def test_extraction_and_ours_vs_authors(authors_folder, tmp_path):
    """Extracted files are ours' format; a model compared with itself is at distance 0, with
    another seed far away."""
    from repdist.experiments.pairs import compare_seeds
    from repdist.io import read_parquet_metadata

    sums = read_checksums(authors_folder / "SHA256SUMS.tsv")
    trained = [authors_folder / str(synthetic_name(4, s, 16)) for s in range(3)]
    outs = [{k: tmp_path / f"s{s}" / f"{k}.{'json' if k == 'metrics' else 'parquet'}"
             for k in ("embeddings", "unembeddings", "metrics")} for s in range(3)]
    files = [SeedFiles({"test": o["embeddings"]}, o["unembeddings"], o["metrics"]) for o in outs]
    rows = extract_synthetic(trained, sums, files, 400, 1, {"config_hash": "x"})
    assert [r["seed"] for r in rows] == [0, 1, 2]
    emb = pd.read_parquet(outs[0]["embeddings"])
    assert list(emb.columns) == ["index", "label", "pred", "f_0", "f_1"] and len(emb) == 400
    assert read_parquet_metadata(outs[0]["embeddings"])["sha256"] == sums[trained[0].name]
    metrics = [dict(r) for r in rows]
    args = [[o["embeddings"] for o in outs], [o["unembeddings"] for o in outs], metrics]
    pairs = compare_seeds([0, 1, 2], *args, {"num_samples": 50, "seed": 0})
    files = [(o["embeddings"], o["unembeddings"], m) for o, m in zip(outs, metrics, strict=True)]
    same = {"K": 4, "width": 16, "seeds": [0, 1, 2], "ours": files, "authors": files,
            "authors_pairs": pairs, "ours_pairs": pairs}
    table = ours_vs_authors([same], {"num_samples": 50, "seed": 0})
    assert np.allclose(table["d_llv"], 0.0) and np.allclose(table["kl"], 0.0, atol=1e-12)
    assert (table["authors_inter_seed_d_llv"] > 0.01).all()
    shifted = {**same, "authors": files[1:] + files[:1]}
    far = ours_vs_authors([shifted], {"num_samples": 50, "seed": 0})
    assert (far["d_llv"] > 0.01).all()
    text = ours_vs_authors_markdown(table)
    assert "3 of 3 models within d_LLV 0.03" in text and "| 4 | 16 | 0 |" in text
    with pytest.raises(ChecksumError, match="does not match"):
        extract_synthetic(trained[:1], {trained[0].name: "0" * 64}, files[:1], 400, 1, {})


@pytest.fixture
def zenodo(tmp_path):
    """A real HTTP server on localhost serving a Zenodo-style record (REST JSON with files[].key,
    checksum "md5:...", links.self) and the files it lists."""
    import http.server
    import json
    import threading
    from functools import partial

    from repdist.models.authors import cifar_name
    from repdist.io import file_digest
    from repdist.experiments.authors.checkpoints import write_cifar_standin

    site = tmp_path / "site"
    (site / "files").mkdir(parents=True)
    paths = write_cifar_standin(site / "files", [0, 1], base_width=4)
    handler = partial(http.server.SimpleHTTPRequestHandler, directory=str(site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    files = [{"key": p.name, "checksum": f"md5:{file_digest(p, 'md5')}",
              "links": {"self": f"{base}/files/{p.name}"}} for p in paths]
    (site / "record.json").write_text(json.dumps({"files": files}))
    yield f"{base}/record.json", [str(cifar_name(s)) for s in (0, 1)], site
    server.shutdown()


def test_cifar_checkpoints_from_a_zenodo_record_are_checked_and_read(zenodo, tmp_path):
    from repdist.models.authors import load_cifar_model
    from repdist.experiments.authors.checkpoints import fetch_cifar

    record, names, site = zenodo
    fetch_cifar(record, names, tmp_path / "got")
    for name in names:
        assert (tmp_path / "got" / name).read_bytes() == (site / "files" / name).read_bytes()
        model = load_cifar_model(tmp_path / "got" / name)
        assert model.f_net.conv1.weight.shape[0] == 4 and not model.training
    with pytest.raises(DownloadError, match="the record has no.*authors_models.cifar_root"):
        fetch_cifar(record, ["2025-04-22trained_cifar10_missing"], tmp_path / "none")
    (site / "files" / names[1]).write_bytes(b"corrupted")  # served bytes no longer match
    with pytest.raises(ChecksumError, match="does not match the record's"):
        fetch_cifar(record, names[1:], tmp_path / "bad")
    assert not (tmp_path / "bad" / names[1]).exists()  # nothing half-written


def test_cifar_checkpoint_of_another_shape_is_refused(tmp_path):
    from repdist.models.authors import cifar_name, load_cifar_model

    path = tmp_path / str(cifar_name(0))
    torch.save({"f_net.conv1.weight": torch.zeros(4, 3, 3, 3)}, path)
    with pytest.raises(AuthorsCheckpointError, match="differ from the ResNet-18"):
        load_cifar_model(path)


@pytest.mark.parametrize(("d_llv", "verdict"), [
    ([0.003, 0.005, 0.013, 0.017, 0.003, 0.004, 0.043, 0.022, 0.003, 0.012], "pass"),
    ([0.003, 0.005, 0.013, 0.017, 0.05, 0.04, 0.043, 0.022, 0.3, 0.012], "FAIL"),
])
def test_only_the_retrace_goal_has_a_verdict(d_llv, verdict):
    from repdist.experiments.paper_comparison.checks import retrace_checks
    from repdist.experiments.authors.ours_vs_authors import OURS_VS_AUTHORS_COLUMNS

    table = pd.DataFrame({c: 0.0 for c in OURS_VS_AUTHORS_COLUMNS}, index=range(10))
    table["K"], table["width"], table["seed"] = [4] * 5 + [6] * 5, 16, list(range(5)) * 2
    table["d_llv"], table["warning"] = d_llv, ""
    checks = retrace_checks(table)
    assert [c.verdict for c in checks[:12]] == ["informational"] * 12  # 10 seeds, 2 summaries
    assert checks[-1].verdict == verdict
    assert retrace_checks(table, standin=True)[-1].verdict == "informational"
