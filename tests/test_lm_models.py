"""Outside language models in the DAG (lm.models): the stand-ins (tiny GPT-2, GPT-NeoX and Llama
built from configs, one tokenizer), the tokenizers compared by their files before any job, a
hub model that cannot be had offline stopping the run at start-up, the contexts and metrics,
and the named pairs table from the one pairs loop."""

import copy
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from repdist.experiments.lm.extraction import (
    CorpusConfig,
    check_same_vocabulary,
    corpus_text,
    loaded_tokenizer_digest,
    model_metrics,
)
from repdist.experiments.pairs import NAMED_PAIR_COLUMNS, PAIR_COLUMNS, compare_named, compare_seeds
from repdist.pipeline.config_checks import check_config, check_lm_models
from repdist.pipeline.config_errors import ConfigError
from repdist.io.hub import tokenizer_digest
from repdist.pipeline.lm_model_sources import (
    LMModel,
    check_lm_models_available,
    check_shared_tokenizer,
    lm_models,
    tokenizer_identity,
)

from conftest import SNAKEMAKE

ROOT = Path(__file__).resolve().parents[1]
TEXT = "def f(x):\n    return x + 1\n\nclass A:\n    pass\n" * 40
OTHER_TEXT = "the cat sat on the mat and the dog sat on the log\n" * 40


def config_with(models):
    cfg = yaml.safe_load((ROOT / "config.yaml").read_text())
    cfg["lm"]["models"] = models
    return cfg


@pytest.fixture(scope="module")
def standins(tmp_path_factory):
    """The three stand-ins as the lm_standin jobs make them."""
    from repdist.models.lm_standins import StandinSpec, save_standin

    folder = tmp_path_factory.mktemp("standins")
    specs = {"g": StandinSpec("gpt2", width=8), "n": StandinSpec("gpt_neox", width=8, seed=1),
             "l": StandinSpec("llama", width=8, seed=2)}
    made = {name: save_standin(folder / name, spec, TEXT, context=12)
            for name, spec in specs.items()}
    return folder, made


def test_standins_load_as_hub_models_sharing_one_tokenizer(standins):
    from repdist.extract import load_causal_lm, load_tokenizer

    folder, made = standins
    vocab = made["g"]["vocab_size"]
    assert 257 < vocab <= 384 and {m["vocab_size"] for m in made.values()} == {vocab}
    assert not list(folder.glob("*.tmp"))
    prints = {tokenizer_identity(LMModel(n, str(folder / n))) for n in "gnl"}
    assert len(prints) == 1 and None not in prints
    kinds = {type(load_causal_lm(str(folder / n))).__name__ for n in "gnl"}
    assert kinds == {"GPT2LMHeadModel", "GPTNeoXForCausalLM", "LlamaForCausalLM"}
    tokenizer = load_tokenizer(str(folder / "l"))
    ids = tokenizer(TEXT[:80], add_special_tokens=False)["input_ids"]
    assert tokenizer.decode(ids) == TEXT[:80] and max(ids) < vocab


def test_a_standin_tokenizer_is_the_same_for_the_same_text(standins, tmp_path):
    from repdist.models.lm_standins import standin_tokenizer

    folder, _ = standins
    standin_tokenizer(TEXT).save_pretrained(tmp_path / "again")
    assert tokenizer_digest(str(tmp_path / "again")) == tokenizer_digest(str(folder / "g"))


def test_a_tokenizer_reads_the_same_from_tokenizer_json_and_vocab_merges(tmp_path):
    """GPT-2's slow files (vocab.json, merges.txt) and its fast tokenizer.json give one
    fingerprint; another vocabulary another."""
    import transformers

    from repdist.models.lm_standins import standin_tokenizer

    fast = standin_tokenizer(TEXT)
    fast.save_pretrained(tmp_path / "fast")
    model = json.loads((tmp_path / "fast" / "tokenizer.json").read_text())["model"]
    slow = tmp_path / "slow"
    slow.mkdir()
    (slow / "vocab.json").write_text(json.dumps(model["vocab"]))
    merges = [m if isinstance(m, str) else " ".join(m) for m in model["merges"]]
    (slow / "merges.txt").write_text("#version: 0.2\n" + "\n".join(merges) + "\n")
    assert isinstance(transformers.GPT2Tokenizer(str(slow / "vocab.json"),
                                                 str(slow / "merges.txt")),
                      transformers.GPT2Tokenizer)  # a real slow tokenizer's files
    assert tokenizer_digest(str(tmp_path / "fast")) == tokenizer_digest(str(slow))
    standin_tokenizer(OTHER_TEXT).save_pretrained(tmp_path / "other")
    assert tokenizer_digest(str(tmp_path / "other")) != tokenizer_digest(str(tmp_path / "fast"))
    assert tokenizer_digest(str(tmp_path)) is None  # no tokenizer files


def two_tokenizers(tmp_path):
    """Folders of two tokenizers (three models: a and b share one, c has another)."""
    from repdist.models.lm_standins import standin_tokenizer

    for name, text in (("a", TEXT), ("b", TEXT), ("c", OTHER_TEXT)):
        standin_tokenizer(text).save_pretrained(tmp_path / name)
    return {n: {"model": str(tmp_path / n)} for n in "abc"}


def test_mixed_tokenizers_are_refused_naming_the_models(tmp_path):
    models = two_tokenizers(tmp_path)
    with pytest.raises(ConfigError, match=r"lm\.models.*a, b share one; c has its own"):
        check_config(config_with(models))
    check_lm_models(config_with({n: models[n] for n in "ab"}))
    with pytest.raises(ConfigError, match="share a tokenizer"):
        check_shared_tokenizer([*lm_models(config_with({"a": models["a"]})),
                                LMModel("s", standin={"arch": "gpt2"})])
    hub = {"a": models["a"], "h": {"model": "repdist-tests/not-cached"}}
    check_lm_models(config_with(hub))  # not here yet: its extraction job compares it


def test_impossible_lm_models_name_the_key():
    with pytest.raises(ConfigError, match=r"lm\.models.*at least two"):
        check_lm_models(config_with({"one": {"model": "gpt2"}}))
    bad = {"a": {"standin": {"arch": "gpt2", "width": 10, "heads": 4}},
           "b": {"standin": {"arch": "llama"}}}
    with pytest.raises(ConfigError, match=r"lm\.models\.a\.standin\.heads"):
        check_lm_models(config_with(bad))
    with pytest.raises(ConfigError, match=r"pairs\.parquet.*other names"):
        check_lm_models(config_with({"a": {"model": "x"}, "pairs.parquet": {"model": "y"}}))
    check_lm_models(config_with({}))


def test_lm_models_schema_rejects_an_entry_without_a_model():
    from snakemake.utils import validate
    from snakemake_interface_common.exceptions import WorkflowError

    schema = str(ROOT / "workflow/schemas/config.schema.yaml")
    validate(config_with({"a": {"model": "gpt2", "revision": "main"},
                          "b": {"standin": {"arch": "llama", "width": 24}}}), schema)
    for entry in ({"revision": "step1"}, {"model": "gpt2", "standin": {"arch": "gpt2"}},
                  {"standin": {"arch": "mamba"}}, {"model": "gpt2", "dtype": "bf16"}):
        with pytest.raises(WorkflowError):
            validate(config_with({"a": entry, "b": {"model": "gpt2"}}), schema)


def test_a_hub_model_neither_local_nor_cached_offline_stops_naming_it(monkeypatch, tmp_path):
    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("TRANSFORMERS_OFFLINE", raising=False)
    entries = [LMModel("p1k", "EleutherAI/pythia-70m", "step1000"),
               LMModel("mine", str(tmp_path)), LMModel("s", standin={"arch": "gpt2"})]
    with pytest.raises(ConfigError, match=r"p1k \(EleutherAI/pythia-70m@step1000\).*offline") \
            as err:
        check_lm_models_available(entries, probe=lambda url: "offline")
    assert "hf download EleutherAI/pythia-70m --revision step1000" in str(err.value)
    assert "mine" not in str(err.value).split(":")[1]  # a folder is never refused
    check_lm_models_available(entries, probe=lambda url: None)  # online: its job downloads it
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(ConfigError, match="HF_HUB_OFFLINE"):
        check_lm_models_available(entries, probe=lambda url: None)
    # in the cache (huggingface_hub's layout: refs/<revision> -> snapshots/<commit>/)
    repo = tmp_path / "hub" / "models--EleutherAI--pythia-70m"
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "step1000").write_text("abc123")
    (repo / "snapshots" / "abc123").mkdir(parents=True)
    (repo / "snapshots" / "abc123" / "config.json").write_text("{}")
    check_lm_models_available(entries)


def run_snakemake(tmp_path, models, *args, env=None):
    overlay = tmp_path / "overlay.yaml"
    overlay.write_text(yaml.safe_dump({"lm": {"models": models}}))
    cmd = [*SNAKEMAKE, "lm_models_all", *args, "--cores", "1", "-s", str(ROOT / "Snakefile"),
           "--directory", str(tmp_path / "work"), "--configfile", str(overlay)]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300,
                          env={**os.environ, **(env or {})})


@pytest.mark.slow  # three Snakemake starts (~15 s; the checks themselves: the tests above)
def test_the_dag_refuses_an_uncached_hub_model_offline_and_mixed_tokenizers(tmp_path):
    """Through Snakemake: hub ids not here, offline, stop the run at start-up naming them and
    the way out, before any job; a dry run (no job to start) is not blocked; models of two
    tokenizers stop even a dry run, naming them."""
    hub = {"pythia": {"model": "repdist-tests/pythia-a", "revision": "step1"},
           "other": {"model": "repdist-tests/pythia-b"}}
    env = {"HF_HUB_OFFLINE": "1", "HF_HOME": str(tmp_path / "hf")}
    res = run_snakemake(tmp_path, hub, env=env)
    out = res.stdout + res.stderr
    assert res.returncode != 0 and "config key 'lm.models'" in out
    assert "pythia (repdist-tests/pythia-a@step1)" in out and "other (" in out
    assert "hf download repdist-tests/pythia-a --revision step1" in out
    assert "Finished jobid" not in out and not (tmp_path / "work" / "results").exists()
    assert run_snakemake(tmp_path, hub, "-n", env=env).returncode == 0
    mixed = run_snakemake(tmp_path, two_tokenizers(tmp_path), "-n")
    assert mixed.returncode != 0
    assert "a, b share one; c has its own" in mixed.stdout + mixed.stderr


def test_the_corpus_is_the_stdlib_eval_text_or_a_file(tmp_path):
    text, info = corpus_text(CorpusConfig("stdlib", 150_000, 0.2))
    assert info["corpus"] == "stdlib" and 0 < len(text.encode()) == info["bytes_eval"]
    (tmp_path / "t.txt").write_text(OTHER_TEXT)
    text, info = corpus_text(CorpusConfig(str(tmp_path / "t.txt"), 0, 0.1))
    assert text == OTHER_TEXT and info["bytes"] == len(OTHER_TEXT)
    with pytest.raises(FileNotFoundError, match="lm.corpus"):
        corpus_text(CorpusConfig(str(tmp_path / "none.txt"), 0, 0.1))


def test_metrics_score_the_known_next_tokens_and_vocabularies_must_agree():
    nll = np.array([1.0, 3.0, np.nan])
    labels, preds = np.array([4, 5, -1]), np.array([4, 0, 2])
    metrics = model_metrics(nll, labels, preds)
    assert metrics["final_test_loss"] == 2.0 and metrics["test_accuracy"] == 0.5
    assert metrics["positions_scored"] == 2
    with pytest.raises(ValueError, match="no kept position"):
        model_metrics(nll[2:], labels[2:], preds[2:])
    check_same_vocabulary("m", "abc", {"tokenizer_digest": "abc"})
    with pytest.raises(ValueError, match=r"lm\.models\.m: .*tok0"):
        check_same_vocabulary("m", "abc", {"tokenizer_digest": "x", "tokenizer": "tok0"})


def test_a_job_and_the_dag_give_a_tokenizer_one_identity(standins, tmp_path, monkeypatch):
    """The digest a job records after loading a tokenizer (loaded_tokenizer_digest) is the one
    the DAG compared before any job (tokenizer_identity), and the same when its files are not
    where the job can read them (then the tokenizer saved again)."""
    from repdist.extract import load_tokenizer
    from repdist.models.lm_standins import standin_tokenizer

    folder, _ = standins
    at_start = tokenizer_identity(LMModel("g", str(folder / "g")))
    tokenizer = load_tokenizer(str(folder / "g"))
    assert loaded_tokenizer_digest(tokenizer, str(folder / "g")) == at_start
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert loaded_tokenizer_digest(tokenizer, "repdist-tests/not-cached") == at_start
    other = standin_tokenizer(OTHER_TEXT)
    assert loaded_tokenizer_digest(other, "repdist-tests/not-cached") != at_start


def test_named_pairs_are_the_seed_pairs_by_name(rng, tmp_path):
    from repdist.experiments.outputs import SeedFiles, SeedRepresentations, write_seed

    files, metrics = [], []
    for s in range(3):
        f, g = rng.normal(size=(120, 3)), rng.normal(size=(7, 3))
        folder = tmp_path / f"m{s}"
        sf = SeedFiles({"test": folder / "e.parquet"}, folder / "u.parquet", folder / "m.json")
        m = {"final_test_loss": float(s), "test_accuracy": 0.1 * s}
        write_seed(sf, SeedRepresentations(g, {"test": f}, {"test": np.zeros(120, int)}), {}, m)
        files.append(sf)
        metrics.append(m)
    args = ([str(f.embeddings["test"]) for f in files], [str(f.unembeddings) for f in files],
            metrics, {"num_samples": 5, "seed": 0})
    named = compare_named(["gpt2", "gpt2-medium", "gpt2-xl"], *args)
    seeds = compare_seeds([0, 1, 2], *args)
    assert list(named.columns) == NAMED_PAIR_COLUMNS == ["model_a", "model_b", *PAIR_COLUMNS[2:]]
    assert named[["model_a", "model_b"]].values.tolist() == [
        ["gpt2", "gpt2-medium"], ["gpt2", "gpt2-xl"], ["gpt2-medium", "gpt2-xl"]]
    pd.testing.assert_frame_equal(named.iloc[:, 2:], seeds.iloc[:, 2:])
    assert named["test_loss_diff"].tolist() == [1.0, 2.0, 1.0]


def test_a_revision_is_named_in_the_offline_message(monkeypatch):
    from repdist.extract import ExtractionError, load_causal_lm

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(ExtractionError, match=r"at revision 'step1000'.*hf download "
                       r"repdist-tests/none --revision step1000"):
        load_causal_lm("repdist-tests/none", revision="step1000")


def test_lm_models_entries_keep_the_config_order():
    cfg = config_with({"z": {"model": "gpt2"}, "a": {"model": "x", "revision": "r1",
                                                      "tokenizer": "t"}})
    entries = lm_models(copy.deepcopy(cfg))
    assert [e.name for e in entries] == ["z", "a"]
    assert entries[1].where == "x@r1" and entries[1].tokenizer == "t" and entries[0].on_hub


@pytest.mark.parametrize(("name", "path"), [
    ("gpt2", False), ("EleutherAI/pythia-70m", False), ("openai-community/gpt2-xl", False),
    ("/models/gpt2", True), ("./gpt2", True), ("../models/gpt2", True), ("~/models/gpt2", True),
    (".", True), ("..", True), ("models/gpt2/step1000", True), ("gpt2/", True),
    ("models//gpt2", True),
])
def test_a_path_is_told_from_a_hub_id_by_its_shape(name, path):
    from repdist.io.hub import path_shaped

    assert path_shaped(name) is path


def test_a_revision_of_a_folder_is_refused_naming_the_key(tmp_path):
    """A folder holds one set of weights: from_pretrained would ignore the revision, and the
    files would record it as if used."""
    models = two_tokenizers(tmp_path)
    with pytest.raises(ConfigError, match=r"lm\.models\.b\.revision.*one set of weights"):
        check_config(config_with({"a": models["a"], "b": {**models["b"], "revision": "step9"}}))
    hub = {"a": models["a"], "h": {"model": "repdist-tests/not-cached", "revision": "step9"}}
    check_lm_models(config_with(hub))  # a hub id takes a revision


@pytest.mark.parametrize("online", [True, False])
def test_a_path_that_is_no_folder_is_refused_whether_or_not_the_hub_is_reachable(
        tmp_path, monkeypatch, online):
    """Refused at start-up by its shape, not by the hub being out of reach, and never told to
    `hf download` a path; a path's tokenizer as well."""
    import repdist.pipeline.lm_model_sources as sources

    reached = []
    monkeypatch.setattr(sources, "unreachable",
                        lambda url, timeout=3.0: reached.append(url) or (None if online else "x"))
    folder = two_tokenizers(tmp_path)["a"]
    for key, entry in (("model", {"model": str(tmp_path / "gone" / "gpt2")}),
                       ("model", {"model": "./gone/gpt2"}),
                       ("tokenizer", {"model": "gpt2", "tokenizer": "~/no-such-tokenizer"})):
        with pytest.raises(ConfigError, match=rf"lm\.models\.p\.{key}.*no folder") as err:
            check_config(config_with({"a": folder, "p": entry}))
        assert "hf download" not in str(err.value)
    (tmp_path / "file").write_text("not a folder")
    with pytest.raises(ConfigError, match=r"lm\.models\.p\.model"):
        check_lm_models(config_with({"a": folder, "p": {"model": str(tmp_path / "file")}}))
    entry = LMModel("p", str(tmp_path / "gone"))
    assert not entry.on_hub
    check_lm_models_available([entry], probe=lambda url: "offline")  # never a hub download
    assert not reached


def test_the_loader_refuses_a_revision_of_a_folder_and_a_path_that_is_no_folder(standins,
                                                                                tmp_path):
    from repdist.extract import ExtractionError, load_causal_lm, load_tokenizer

    folder, _ = standins
    with pytest.raises(ExtractionError, match="one set of weights.*'step9'"):
        load_causal_lm(str(folder / "g"), revision="step9")
    with pytest.raises(ExtractionError, match="no such folder") as err:
        load_tokenizer(str(tmp_path / "gone"))
    assert "hf download" not in str(err.value)


def test_models_of_three_widths_keep_every_models_width_in_the_pairs_provenance(rng, tmp_path):
    """Widths 3, 5 and 3: the pairs table's metadata holds every model's M (and revision), and
    the figure's title their range, not the first model's."""
    from repdist.experiments.lm.extraction import write_lm_model
    from repdist.experiments.outputs import SeedFiles
    from repdist.experiments.pairs import pairs_metadata
    from repdist.figures.lm import seed_pairs_figure

    names, files, metrics = ["a", "b", "c"], [], []
    for name, width, revision in zip(names, (3, 5, 3), ("step1", "step2", "step1")):
        folder = tmp_path / name
        sf = SeedFiles({"test": folder / "e.parquet"}, folder / "u.parquet", folder / "m.json")
        m = model_metrics(np.ones(60), np.zeros(60, int), np.zeros(60, int))
        write_lm_model(sf, rng.normal(size=(60, width)), rng.normal(size=(9, width)),
                       np.zeros(60, int), {"name": name, "revision": revision,
                                           "positions": "last"}, m)
        files.append(sf)
        metrics.append(m)
    embeddings = [f.embeddings["test"] for f in files]
    measures = {"num_samples": 2, "seed": 0}
    with pytest.warns(UserWarning, match="widths differ"):
        pairs = compare_named(names, embeddings, [f.unembeddings for f in files], metrics,
                              measures)
    meta = pairs_metadata(names, embeddings, measures)
    assert meta["M"] == {"a": 3, "b": 5, "c": 3} and meta["K"] == 9
    assert meta["revision"] == {"a": "step1", "b": "step2", "c": "step1"}
    assert "name" not in meta and meta["measures"] == measures
    title = seed_pairs_figure(pairs, meta)._suptitle.get_text()
    assert "M = 3-5," in title and "K = 9 tokens" in title
    same = pairs_metadata(names[::2], embeddings[::2], measures)
    assert same["M"] == 3 and same["revision"] == "step1"


def test_the_layer_tables_provenance_holds_for_every_model(tmp_path, rng):
    from repdist.experiments.lm.layers import layers_metadata, read_layer_set, write_layers

    sets = []
    for name, revision in (("a", "step1"), ("b", "step2")):
        states = {i: rng.normal(size=(20, 4)).astype(np.float32) for i in range(2)}
        write_layers(tmp_path / name, states, np.zeros(20, int), np.zeros(20, int),
                     {"name": name, "count": 2, "head_input": 1, "revision": revision,
                      "positions": "last"})
        sets.append(read_layer_set(name, tmp_path / name))
    meta = layers_metadata(sets, "all", [4])
    assert meta["revision"] == {"a": "step1", "b": "step2"} and meta["positions"] == "last"
    assert [m["name"] for m in meta["models"]] == ["a", "b"] and "count" not in meta
