"""The Platonic Representation Hypothesis' study (prh:): the layer-pair maximum and its null,
the extraction of language and vision features against independent computations (bits per
byte summed by hand, CLS tokens read by forward hooks on each block, a caption read alone), the
pairs' readers and their errors, resumable extraction, and the start-up checks."""

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
import transformers  # in the test extra and the lock: its absence fails, not skips
from PIL import Image

from repdist.data.image_captions import (
    ImageCaptionError,
    read_folder,
    standin_pairs,
    write_standin_pairs,
)
from repdist.experiments.prh.study import (
    StudyModel,
    StudySettings,
    extract_to_folder,
    study_table,
    trend_rows,
)
from repdist.extract import ExtractionError
from repdist.extract.hf import load_image_processor, load_vision_encoder
from repdist.extract.image_text import Reading, caption_batches, language_features, vision_features
from repdist.measures import prh
from repdist.measures.extra import mutual_knn
from repdist.measures.null import NullSettings, benjamini_hochberg, permutations
from repdist.measures.prh_layers import layer_alignment, prepare_layers, score_table
from repdist.models.lm_standins import StandinSpec, build_standin, standin_tokenizer
from repdist.models.prh_standins import VisionStandinSpec, save_vision_standin
from repdist.pipeline.config_errors import ConfigError
from repdist.pipeline.prh_sources import check_prh, check_prh_available

pytestmark = pytest.mark.numerics  # make test-kernels runs it under other CPUs' kernels

CAPTIONS = ["a red circle", "ein großer grüner Würfel — oben links", "a blue square at the top",
            "une croix jaune", "x", "a small purple triangle in the centre of the picture"]


def related_layers(n=120, seed=0):
    rng = np.random.default_rng(seed)
    x = [rng.normal(size=(n, 6)) for _ in range(3)]
    y = [x[1] @ rng.normal(size=(6, 6)) + 0.5 * rng.normal(size=(n, 6)),
         rng.normal(size=(n, 4))]
    return x, y


@pytest.mark.parametrize("metric", ["mutual_knn", "cycle_knn", "lcs_knn", "edit_distance_knn"])
def test_a_reordered_table_equals_each_layer_pair_recomputed(metric):
    x, y = related_layers()
    px, py = prepare_layers(x), prepare_layers(y)
    order = np.random.default_rng(3).permutation(120)
    table = score_table(metric, px, py, 10)(order)
    if metric == "mutual_knn":
        ref = [[mutual_knn(a, b[order], 10) for b in py.layers] for a in px.layers]
    else:
        ref = [[prh.knn_metrics(a, b[order], 10)[metric] for b in py.layers] for a in px.layers]
    np.testing.assert_allclose(table, ref, atol=1e-12)
    assert table.shape == (4, 3)  # 3 and 2 layers, each plus the concatenation


def test_one_clamp_over_all_layers_then_unit_rows_and_the_concatenation_last():
    x, _ = related_layers()
    x[2] = 50 * x[2]  # a layer of large values sets the threshold for all
    layers = prepare_layers(x, q=0.9).layers
    t = np.quantile(np.abs(np.concatenate(x, axis=1)), 0.9, axis=1).mean()
    for got, raw in zip(layers, x, strict=False):
        np.testing.assert_allclose(got, prh.unit_rows(np.clip(raw, -t, t)))
    np.testing.assert_allclose(layers[-1], prh.unit_rows(np.clip(np.concatenate(x, 1), -t, t)))


def test_the_best_pair_and_the_null_of_the_maximum_equal_calibrate_layers():
    calibration = pytest.importorskip("calibrated_similarity")
    x, y = related_layers(n=80, seed=5)
    px, py = prepare_layers(x), prepare_layers(y)
    k, seed = 49, 11
    found = layer_alignment(px, py, "mutual_knn", 10, NullSettings(permutations=k, seed=seed))
    assert found.best == (1, 0)  # the layer y was made from, and y's first layer
    orders, _, _ = permutations(80, k, seed)

    def sim(a, b):
        return mutual_knn(a.numpy(), b.numpy(), 10)

    cal, p, tau = calibration.calibrate_layers(
        [torch.as_tensor(a) for a in px.layers], [torch.as_tensor(b) for b in py.layers], sim,
        agg="max", K=k, alpha=0.05,
        perm_fn=lambda n, device: torch.as_tensor(next(orders), device=device))
    assert found.tau == pytest.approx(float(tau))
    assert found.p == pytest.approx(float(p))
    assert found.calibrated == pytest.approx(float(cal), rel=1e-6)  # theirs in float32
    assert 0 < found.calibrated < 1


def test_shuffled_pairs_are_calibrated_to_zero_in_most_draws():
    x, y = related_layers(n=100, seed=2)
    px = prepare_layers(x)
    zeros = 0
    for draw in range(10):
        order = np.random.default_rng(draw).permutation(100)
        py = prepare_layers([b[order] for b in y])
        found = layer_alignment(px, py, null=NullSettings(permutations=39, seed=draw))
        zeros += found.calibrated == 0
    assert zeros >= 8


def test_benjamini_hochberg_by_its_definition():
    p = np.array([[0.01, 0.04], [0.03, np.nan], [0.2, 0.005]])
    q = benjamini_hochberg(p)
    # sorted 0.005 0.01 0.03 0.04 0.2 (m = 5): p m / rank = .025 .025 .05 .05 .2, then the
    # running minimum from the top
    assert q[2, 1] == pytest.approx(0.025) and q[0, 0] == pytest.approx(0.025)
    assert q[1, 0] == pytest.approx(0.05) and q[0, 1] == pytest.approx(0.05)
    assert q[2, 0] == pytest.approx(0.2) and np.isnan(q[1, 1])
    # where a larger p has the smaller p m / rank, the smaller p takes it (the running minimum):
    # p m / rank = .04 .024 .0533 .041 -> q = .024 .024 .041 .041
    np.testing.assert_allclose(benjamini_hochberg(np.array([0.01, 0.012, 0.04, 0.041])),
                               [0.024, 0.024, 0.041, 0.041])


@pytest.fixture(scope="module")
def gpt2():
    tokenizer = standin_tokenizer(" ".join(CAPTIONS) * 20)
    return build_standin(StandinSpec("gpt2", width=16, seed=4), len(tokenizer), 64), tokenizer


def alone(model, tokenizer, caption):
    """One caption read alone (no padding): every hidden state averaged over its tokens, and
    the sum of -log2 p of each token after the first, over its UTF-8 bytes."""
    ids = torch.tensor([tokenizer(caption)["input_ids"]])
    with torch.no_grad():
        out = model(input_ids=ids, output_hidden_states=True)
    feats = torch.stack(out.hidden_states, 1)[0].mean(1).numpy()
    logp = torch.log_softmax(out.logits[0, :-1].double(), -1)
    bits = -sum(float(logp[t, ids[0, t + 1]]) for t in range(ids.shape[1] - 1)) / np.log(2)
    return feats, bits / len(caption.encode("utf-8"))


def run_language(model, tokenizer, padding, batch_size=4):
    out = list(language_features(model, tokenizer, CAPTIONS, Reading(batch_size, padding)))
    return np.concatenate([o[1] for o in out]), np.concatenate([o[2] for o in out])


def test_each_caption_read_as_if_alone_and_its_bits_per_byte(gpt2):
    model, tokenizer = gpt2
    feats, bpb = run_language(model, tokenizer, "batch")
    for i, caption in enumerate(CAPTIONS):
        want_feats, want_bpb = alone(model, tokenizer, caption)
        np.testing.assert_allclose(feats[i], want_feats, rtol=1e-4, atol=1e-5)
        assert bpb[i] == pytest.approx(want_bpb, rel=1e-5)
    assert feats.shape == (len(CAPTIONS), 3, 16)  # the embeddings and two blocks


def test_prh_padding_shifts_gpt2s_positions_as_theirs_does(gpt2):
    model, tokenizer = gpt2
    feats, _ = run_language(model, tokenizer, "prh", batch_size=6)
    longest = int(np.argmax([len(tokenizer(c)["input_ids"]) for c in CAPTIONS]))
    np.testing.assert_allclose(feats[longest], alone(model, tokenizer, CAPTIONS[longest])[0],
                               rtol=1e-4, atol=1e-5)  # unpadded: the same
    assert not np.allclose(feats[0], alone(model, tokenizer, CAPTIONS[0])[0], atol=1e-3)
    batches = list(caption_batches(tokenizer, CAPTIONS, 2, "prh"))
    assert {b.ids.shape[1] for b in batches} == {len(tokenizer(CAPTIONS[longest])["input_ids"])}
    assert all(b.positions is None for b in batches)


def blocks(model):
    for path in ("layers", "encoder.layer", "encoder.layers"):
        try:
            return model.get_submodule(path)
        except AttributeError:
            continue
    raise AssertionError("no blocks")


@pytest.mark.parametrize("arch", ["vit", "vit_mae", "dinov2", "clip"])
def test_vision_features_are_each_blocks_cls_token_read_by_hooks(tmp_path, arch):
    save_vision_standin(tmp_path / arch, VisionStandinSpec(arch, width=16, seed=1))
    model = load_vision_encoder(str(tmp_path / arch))
    processor = load_image_processor(str(tmp_path / arch))
    images, _ = standin_pairs(6, seed=2)
    feats = np.concatenate([f for _, f in vision_features(model, processor, images,
                                                          Reading(batch_size=4))])
    caught = []
    hooks = [b.register_forward_hook(lambda m, i, o: caught.append(
        (o[0] if isinstance(o, tuple) else o)[:, 0])) for b in blocks(model)]
    pixels = processor(images=images, return_tensors="pt")["pixel_values"]
    kwargs = {"noise": torch.arange(16.0).expand(6, 16)} if arch == "vit_mae" else {}
    with torch.no_grad():
        model(pixel_values=pixels, **kwargs)
    for h in hooks:
        h.remove()
    np.testing.assert_allclose(feats, torch.stack(caught, 1).numpy(), rtol=1e-5, atol=1e-6)
    assert feats.shape == (6, 2, 16)


def test_a_language_model_is_not_a_vision_encoder(tmp_path, gpt2):
    gpt2[0].save_pretrained(tmp_path / "lm")
    with pytest.raises(ExtractionError, match="not a vision transformer encoder"):
        load_vision_encoder(str(tmp_path / "lm"))


def test_pairs_folders_and_their_errors_name_the_file(tmp_path):
    write_standin_pairs(tmp_path / "ok", 20, seed=1)
    pairs = read_folder(tmp_path / "ok")
    assert len(pairs) == 20 and pairs.captions[0].startswith("picture 0: a ")
    assert len(set(pairs.captions)) == 20
    assert pairs.images[0].size == (32, 32)
    (tmp_path / "empty").mkdir()
    Image.new("RGB", (4, 4)).save(tmp_path / "empty" / "a.png")
    with pytest.raises(ImageCaptionError, match="no captions"):
        read_folder(tmp_path / "empty")
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "broken.png").write_bytes(b"not a png")
    (bad / "metadata.jsonl").write_text(json.dumps({"file_name": "broken.png", "text": "x"}))
    with pytest.raises(ImageCaptionError, match="broken.png: the image does not open"):
        read_folder(bad)
    (bad / "metadata.jsonl").write_text(json.dumps({"file_name": "gone.png", "text": "x"}))
    with pytest.raises(ImageCaptionError, match="line 1: no image .*gone.png"):
        read_folder(bad)


def test_the_hub_layout_parquet_reads_as_the_folder(tmp_path):
    import io

    import pyarrow as pa
    import pyarrow.parquet as pq

    images, captions = standin_pairs(5, seed=3)
    data = []
    for img in images:
        buf = io.BytesIO()
        img.save(buf, format="PNG")
        data.append({"bytes": buf.getvalue(), "path": None})
    pq.write_table(pa.table({"image": data, "text": [[c, "other"] for c in captions]}),
                   tmp_path / "train-00000.parquet")
    pairs = read_folder(tmp_path)
    assert list(pairs.captions) == captions
    assert np.array_equal(np.asarray(pairs.images[2]), np.asarray(images[2]))  # exact: integers


def test_an_interrupted_extraction_resumes_and_writes_one_whole_folder(tmp_path):
    rows = np.arange(10 * 2 * 3, dtype=np.float32).reshape(10, 2, 3)

    def batches(start, fail_at=None):
        for lo in range(start, 10, 4):
            if lo == fail_at:
                raise KeyboardInterrupt
            yield slice(lo, min(lo + 4, 10)), rows[lo:lo + 4], rows[lo:lo + 4, 0, 0]

    folder = tmp_path / "m"
    with pytest.raises(KeyboardInterrupt):
        extract_to_folder(folder, lambda s: batches(s, fail_at=8), 10, {"modality": "x"}, {"a": 1})
    assert not folder.exists() and len(list((tmp_path / "m.parts").glob("rows*"))) == 2
    written = extract_to_folder(folder, batches, 10, {"modality": "x"}, {"a": 1})
    assert written["resumed_from_row"] == 8 and not (tmp_path / "m.parts").exists()
    np.testing.assert_array_equal(np.load(folder / "features.npy"), rows)  # exact: a round trip
    assert written["bits_per_byte"] == pytest.approx(rows[:, 0, 0].mean())


def study_model(name, modality, feats, **info):
    return StudyModel(name, feats, {"modality": modality, **info})


def test_the_study_table_one_row_a_pair_and_sets_of_different_sizes_refused():
    x, y = related_layers(n=60)
    vision = [study_model(f"v{i}", "vision", np.stack(x, 1), family="vit", parameters=10 * (i + 1))
              for i in range(2)]
    language = [study_model(f"l{i}", "language", np.stack([y[0], y[0] + i * 0.5], 1),
                            bits_per_byte=1.0 - 0.1 * i) for i in range(3)]
    table = study_table(language, vision, StudySettings(), NullSettings(permutations=19))
    assert len(table) == 6 and table["q"].notna().all()
    assert set(table["vision_layer"]) <= {"0", "1", "2", "all"}
    rows = list(trend_rows(table))
    assert [(r["family"], r["column"]) for r in rows] == [("vit", "score"), ("vit", "calibrated")]
    short = [study_model("l", "language", np.stack([y[0][:50]], 1), bits_per_byte=1.0)]
    with pytest.raises(ValueError, match="different numbers of pairs: l 50, v0 60"):
        study_table(short, vision[:1], StudySettings())


def study_config(**prh):
    import yaml

    cfg = yaml.safe_load((Path(__file__).resolve().parents[1] / "config.yaml").read_text())
    cfg["prh"].update(prh)
    return cfg


def test_start_up_names_every_missing_model_and_the_dataset(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HOME", str(tmp_path))
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    cfg = study_config(language={"b": {"model": "bigscience/bloomz-560m"}},
                       vision={"d": {"model": "facebook/dinov2-small", "family": "dinov2"}})
    with pytest.raises(ConfigError) as err:
        check_prh_available(cfg, ["b", "d"], probe=lambda url: "no route to host")
    text = str(err.value)
    for line in ("hf download bigscience/bloomz-560m", "hf download facebook/dinov2-small",
                 "hf download minhuh/prh --repo-type dataset --revision wit_1024"):
        assert line in text
    check_prh_available(cfg, ["b", "d"], probe=lambda url: None)  # reachable: the jobs fetch


def test_the_config_checks_name_the_key():
    with pytest.raises(ConfigError, match="prh.vision"):
        check_prh(study_config(language={"b": {"model": "bigscience/bloomz-560m"}}))
    with pytest.raises(ConfigError, match="prh.pairs.dataset"):
        check_prh(study_config(language={"b": {"model": "x"}}, vision={"v": {"model": "y"}},
                               pairs={"dataset": "./no/such/folder", "caption": 0}))
    check_prh(study_config())  # off: nothing to check


def test_the_paper_comparison_reads_prhs_claim_per_family_raw_and_calibrated():
    from repdist.experiments.paper_comparison.checks import prh_study_checks

    rows = [{"language": f"l{i}", "vision": v, "family": f, "performance": 0.1 * i,
             "score": 0.1 * i * rising + 0.2, "calibrated": 0.05 * (3 - i), "metric": "mutual_knn"}
            for i in range(4) for v, f, rising in (("a", "vit", 1), ("b", "clip", -1))]
    checks = prh_study_checks(pd.DataFrame(rows), standins=False)
    verdicts = {(c.claim.split(" to the ")[1].split()[0], "calibrated" in c.claim): c.verdict
                for c in checks}
    assert verdicts == {("vit", False): "pass", ("vit", True): "FAIL",
                        ("clip", False): "FAIL", ("clip", True): "FAIL"}
    assert {c.verdict for c in prh_study_checks(pd.DataFrame(rows), standins=True)} == {
        "informational"}


def test_a_features_file_that_disagrees_with_its_info_is_refused_in_words(tmp_path):
    """A study model's features are checked against the shape its extraction recorded."""
    from repdist.experiments.prh.study import FEATURES, INFO, read_study_model
    from repdist.io.validation import InputError

    folder = tmp_path / "model"
    folder.mkdir()
    np.save(folder / FEATURES, np.zeros((6, 2, 3), dtype=np.float32))
    (folder / INFO).write_text(json.dumps({"inputs": 6, "layers": 2, "dim": 3}))
    assert read_study_model("m", folder).features.shape == (6, 2, 3)
    (folder / INFO).write_text(json.dumps({"inputs": 7, "layers": 2, "dim": 3}))
    with pytest.raises(InputError, match=r"shape \(6, 2, 3\), but info.json records"):
        read_study_model("m", folder)
    np.save(folder / FEATURES, np.zeros((7, 2, 3), dtype=np.complex64))
    with pytest.raises(InputError, match="complex"):
        read_study_model("m", folder)
