"""`make gpu-check` (benchmarks/gpu_check.py) without a GPU: its toy run on the CPU writes a
record of the format a GPU run writes, the format refuses what does not fit it, and the
candidates it times equal their reference where a CPU can tell (float64)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

import gpu_record as rec  # noqa: E402

from repdist.experiments.cifar import CifarModelConfig, cifar_stack  # noqa: E402
from repdist.models.resnet import build_cifar_model, effective_bn_momentum  # noqa: E402
from repdist.models.stacked import StackedModelClass  # noqa: E402
from repdist.models.stacked_resnet import StreamedConv2d  # noqa: E402
from repdist.training.loop import RunOptions, TrainData, train  # noqa: E402

from conftest import train_config  # noqa: E402

TOY_CANDIDATES = "synthetic.eager,synthetic.cuda_graph,cifar.stacked,cifar.streams"


def run_check(out: Path, *args: str, toy: bool = True) -> subprocess.CompletedProcess:
    env = {**os.environ, "REPDIST_GPU_TESTS_DEVICE": "cpu"} if toy else {
        k: v for k, v in os.environ.items() if k != "REPDIST_GPU_TESTS_DEVICE"}
    return subprocess.run([sys.executable, str(ROOT / "benchmarks/gpu_check.py"), "--out",
                           str(out), *args], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=600)


def test_the_toy_check_writes_a_record_of_the_gpu_format(tmp_path):
    """REPDIST_GPU_TESTS_DEVICE=cpu: a GPU test, the speed candidates (their checks and
    timings) and the measures at toy size, each part within its slice; the record reads back
    under the format, its table is printed last, and nothing lands in benchmarks/records/."""
    before = set((ROOT / "benchmarks/records").glob("*")) if (
        ROOT / "benchmarks/records").exists() else set()
    res = run_check(tmp_path, "--tests-k", "extract", "--only", TOY_CANDIDATES,
                    "--seconds", "0.2")
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    (record_path,) = tmp_path.glob("cpu-toy-*.json")
    record = rec.read(record_path)
    assert record.status == "complete" and record.toy and record.device == "cpu"
    assert {p: v.status for p, v in record.parts.items()} == {
        "tests": "ok", "speed": "ok", "measures": "ok"}
    assert [(t.name.split("::")[-1], t.outcome) for t in record.tests] == [
        ("test_repdist_extract_on_the_gpu_gives_the_cpus_representations", "passed")]
    rows = {c.name: c for c in record.candidates}
    assert list(rows) == TOY_CANDIDATES.split(",")
    graph = rows["synthetic.cuda_graph"]
    assert graph.status == ("ok" if record.graph_option else "unavailable")
    for name in ("synthetic.eager", "cifar.stacked", "cifar.streams"):
        assert rows[name].status == "ok" and rows[name].steps_per_s > 0
        assert rows[name].paper_minutes > 0
    assert rows["cifar.stacked"].checks[0].kind == "baseline"
    assert rows["cifar.stacked"].checks[0].baseline > 0  # float32 sums in another order differ
    kinds = {c.kind: c for c in rows["cifar.streams"].checks}
    assert kinds["float64"].passes and kinds["float64"].distance <= 1e-12
    assert kinds["rounding"].passes is True
    measures = {m.name: m for m in record.measures}
    assert measures["equal.device"].passes and measures["gpt2.device_exact"].passes
    assert measures["gpt2.device_exact"].proven
    assert (tmp_path / "tests-junit.xml").exists() and (tmp_path / "gpu-check.log").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [record_path.name, record_path.with_suffix(".md").name, "tests-junit.xml",
         "gpu-check.log"])  # within what the device tool brings back (8 files)
    assert "| cifar.streams | cifar10.stack: streams | ok |" in res.stdout
    assert res.stdout.rstrip().splitlines()[-1].startswith("gpu-check: record ")
    after = set((ROOT / "benchmarks/records").glob("*")) if (
        ROOT / "benchmarks/records").exists() else set()
    assert after == before


def test_the_check_refuses_without_a_gpu(tmp_path):
    if torch.cuda.is_available():
        pytest.skip("a GPU is here")
    res = run_check(tmp_path, toy=False)
    assert res.returncode == 1
    assert "torch sees no CUDA GPU here" in res.stdout and not list(tmp_path.glob("*.json"))


def a_record() -> dict:
    check = rec.Check("rounding", 30, 1e-6, 1e-6, 3e-6, True)
    cand = rec.Candidate("cifar.bf16", "cifar", "cifar10.bf16: true", "cifar.stacked", "ok",
                         12.0, 1, 10, 500, 10.0, 50.0, 500.0, 20.3, "n", [check])
    record = rec.Record(rec.SCHEMA, "complete", False, "cuda", "NVIDIA H100 80GB HBM3",
                        "nvidia-h100-80gb-hbm3", "2.11.0", "13.0", "91000", "3.12.3", "abc",
                        False, "2026-11-27", "10:00:00Z", "h", "cpu", 540.0, 500.0, 10.0,
                        {"speed": rec.Part("ok", 300.0, 250.0)}, [], [cand], [], True)
    return record.to_dict()


@pytest.mark.parametrize("damage, message", [
    (lambda d: d.pop("commit"), "missing \\['commit'\\]"),
    (lambda d: d.update(extra=1), "unknown \\['extra'\\]"),
    (lambda d: d["candidates"][0].update(status="fast"), "candidate.status is 'fast'"),
    (lambda d: d["candidates"][0].update(steps_per_s="50"), "expected a number"),
    (lambda d: d["candidates"][0]["checks"][0].update(passes="yes"), "expected bool"),
    (lambda d: d.update(schema="repdist-gpu-check/0"), "this reader knows"),
])
def test_a_record_that_does_not_fit_the_format_is_refused(damage, message):
    data = a_record()
    assert rec.Record.from_dict(json.loads(json.dumps(data))).to_dict() == data
    damage(data)
    with pytest.raises(rec.RecordError, match=message):
        rec.Record.from_dict(data)


def test_the_table_says_what_each_candidate_did(tmp_path):
    record = rec.Record.from_dict(a_record())
    json_path, md_path = rec.write(record, tmp_path)
    assert json_path.name == "nvidia-h100-80gb-hbm3-2026-11-27.json"
    line = next(x for x in md_path.read_text().splitlines() if x.startswith("| cifar.bf16"))
    assert "| 50.0 | 20.30 | - | rounding 1.0e-06 ≤ 3.0e-06: ok |" in line  # no reference here
    assert rec.read(json_path) == record


def small_cifar_stack(stack: str):
    models = [build_cifar_model(s, 2, 10, 8, 2, effective_bn_momentum(10)).double()
              for s in (0, 1)]
    net = StackedModelClass(models)
    if stack == "streams":
        net.f_net.stream_convolutions()
    return net


def test_the_streams_stack_trains_as_the_grouped_stack_in_float64():
    """cifar10.stack: streams (dense convolutions per seed; on CUDA each on its own stream):
    the same parameters in the same order, and the same models after training, 1e-12."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(24, 3, 32, 32)).astype(np.float32)
    y = rng.integers(0, 10, 24)
    from repdist.data.radial import label_codes

    data = TrainData(x, y, x[:8], y[:8], label_codes(np.arange(10), 10))
    nets = {}
    for stack in ("grouped", "streams"):
        nets[stack] = small_cifar_stack(stack)
        train(nets[stack], data, train_config(steps=3, batch_size=8, eval_every=2, log_every=1,
                                              protocol="clean"), RunOptions(eval_batch_size=8))
    grouped, streams = nets["grouped"].state_dict(), nets["streams"].state_dict()
    assert list(grouped) == list(streams)
    assert isinstance(nets["streams"].f_net.body.layer1[0].conv1, StreamedConv2d)
    for name, value in grouped.items():
        if value.is_floating_point():
            rel = float((value - streams[name]).norm() / max(float(value.norm()), 1e-300))
            assert rel <= 1e-12, (name, rel)


def test_the_cifar_candidates_keys_reach_the_model():
    """stack and compile (config cifar10) as CifarModelConfig passes them: streams on any
    device, compile on CUDA only (on a CPU the body stays eager); a bad value is refused."""
    cfg = CifarModelConfig(rep_dim=2, seeds=[0, 1], base_width=2, g_width=8,
                           bn_momentum="protocol", device="cpu", bf16=False, tf32="convolutions",
                           channels_last=False, eval_batch_size=8, stack="streams",
                           compile="default", cuda_graph=False)
    stack = cifar_stack(cfg, 0.1, on_cuda=False)
    assert stack.f_net.stack == "streams"
    assert getattr(stack.f_net.body, "_compiled_call_impl", None) is None
    stack.f_net.compile_body("reduce-overhead")
    assert stack.f_net.body._compiled_call_impl is not None
    assert list(stack.f_net.body.state_dict()) == list(
        cifar_stack(CifarModelConfig(**{**cfg.__dict__, "stack": "grouped"}), 0.1,
                    False).f_net.body.state_dict())
    with pytest.raises(ValueError, match="compile must be one of"):
        stack.f_net.compile_body("fast")


def test_the_rounding_baseline_changes_only_the_order_of_sums():
    """The reference again with each batch's rows reversed (gpu_candidates.ReversedBatch): in
    float64 it lands where the reference does (1e-12), so what it measures in float32 is
    rounding, not another computation."""
    import gpu_candidates as gc

    size = gc.TOY_SIZE
    ref = gc.check_run("synthetic", {}, size, torch.device("cpu"), torch.float64)
    rev = gc.check_run("synthetic", {}, size, torch.device("cpu"), torch.float64, True)
    assert gc.distance(rev, ref) <= 1e-12
    rev32 = gc.check_run("synthetic", {}, size, torch.device("cpu"), torch.float32, True)
    ref32 = gc.check_run("synthetic", {}, size, torch.device("cpu"), torch.float32)
    assert 0 < gc.distance(rev32, ref32) < 1e-3
