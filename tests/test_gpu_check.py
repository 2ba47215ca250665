"""`make gpu-check` (repdist_gpucheck) without a GPU: its toy run on the CPU writes a
record of the format a GPU run writes, the format refuses what does not fit it, the candidates
it times equal their reference where a CPU can tell (float64), and every row says what it is:
a capture made to fail is `fallback`, a candidate made wrong FAILS its checks, a baseline that
judges nothing makes its rows `invalid`; a signal ends every part's processes."""

from __future__ import annotations

import argparse
import json
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]
import psutil

from repdist.models.resnet import build_cifar_model, effective_bn_momentum
from repdist.models.stacked import StackedModelClass
from repdist_gpucheck import candidates as gc
from repdist_gpucheck import check as gpu_check
from repdist_gpucheck import measures as gpu_measures
from repdist_gpucheck import profiling as gpu_profiling
from repdist_gpucheck import pytest_plugin
from repdist_gpucheck import record as rec


TOY_CANDIDATES = ("synthetic.eager,synthetic.cuda_graph,cifar.stacked,cifar.cuda_graph,"
                  "cifar.fp16,cifar.no_channels_last")
# the negative controls: every capture of the graph candidate refused; no_channels_last (the
# reference's own arithmetic on a CPU, which has no channels-last path) trained 2 % off
INJECT = "capture:synthetic.cuda_graph,wrong:cifar.no_channels_last"
PROBE = {"torch": "2.13.0", "cuda": "", "cudnn": "", "available": False, "gpu": "",
         "graph_option": True}


def check_command(out: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "repdist_gpucheck", "--out", str(out), *args]


def toy_env(toy: bool = True) -> dict[str, str]:
    return {**os.environ, "REPDIST_GPU_TESTS_DEVICE": "cpu"} if toy else {
        k: v for k, v in os.environ.items() if k != "REPDIST_GPU_TESTS_DEVICE"}


def run_check(out: Path, *args: str, toy: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(check_command(out, *args), cwd=ROOT, env=toy_env(toy),
                          capture_output=True, text=True, timeout=900)


@pytest.mark.slow  # the whole toy check, ~25 s of CPU: `make test-slow` (CI) runs it
def test_the_toy_check_writes_a_record_of_the_gpu_format(tmp_path):
    """REPDIST_GPU_TESTS_DEVICE=cpu: a GPU test, the speed candidates (their checks and
    timings), the measures and the profile at toy size, each part within its slice; the record
    reads back under the format, its table is printed last, and nothing lands in
    benchmarks/records/. The injected faults show: the refused capture's row is `fallback`
    with its error, the candidate trained wrong FAILS both its checks; fp16 is judged by the
    trained models."""
    before = set((ROOT / "benchmarks/records").glob("*")) if (
        ROOT / "benchmarks/records").exists() else set()
    res = run_check(tmp_path, "--tests-k", "extract", "--only", TOY_CANDIDATES,
                    "--seconds", "0.2", "--inject", INJECT)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    (record_path,) = tmp_path.glob("cpu-toy-*.json")
    record = rec.read(record_path)
    assert record.status == "complete" and record.toy and record.device == "cpu"
    assert {p: v.status for p, v in record.parts.items()} == {
        "tests": "ok", "speed": "ok", "measures": "ok", "profile": "ok"}
    assert [(t.name.split("::")[-1], t.outcome) for t in record.tests] == [
        ("test_repdist_extract_on_the_gpu_gives_the_cpus_representations", "passed")]
    rows = {c.name: c for c in record.candidates}
    assert list(rows) == [n for n in gc.part_names("speed") if n in TOY_CANDIDATES.split(",")]
    graph = rows["synthetic.cuda_graph"]
    assert graph.status == "fallback" and graph.steps_per_s > 0
    assert graph.capture_error == "RuntimeError: capture refused on purpose (--inject capture)"
    assert graph.graphs and not any(g.captured or g.replayed for g in graph.graphs.values())
    assert all(g.eager > 0 for g in graph.graphs.values())
    for name in ("synthetic.eager", "cifar.stacked", "cifar.cuda_graph", "cifar.fp16"):
        assert rows[name].status == "ok" and rows[name].steps_per_s > 0
        assert rows[name].paper_minutes > 0
    assert rows["cifar.stacked"].checks[0].kind == "baseline"
    assert rows["cifar.stacked"].checks[0].baseline > 0  # float32 sums in another order differ
    kinds = {c.kind: c for c in rows["cifar.cuda_graph"].checks}
    assert kinds["float64"].passes and kinds["float64"].distance <= 1e-12
    assert kinds["rounding"].passes is True and rows["cifar.cuda_graph"].within_reference
    wrong = {c.kind: c for c in rows["cifar.no_channels_last"].checks}
    assert wrong["float64"].passes is False and wrong["rounding"].passes is False
    assert rows["cifar.no_channels_last"].within_reference is False
    half = {c.kind: c for c in rows["cifar.fp16"].checks}
    assert set(half) == {"measures", "float64"} and half["float64"].passes is None
    judged = half["measures"]
    assert judged.passes is True
    assert 0 <= judged.values["d_llv"] < judged.values["d_llv_seeds"]
    assert judged.values["kl"] < judged.values["kl_seeds"]
    assert half["float64"].distance > half["float64"].baseline > 0  # rounds more
    profile = record.profile
    assert profile.job == "cifar.cuda_graph" and profile.device == "cpu"
    shares = {r.category: r.share for r in profile.rows}
    assert {"convolution forward", "convolution backward", "BatchNorm", "optimiser",
            "idle"} <= set(shares) and sum(shares.values()) == pytest.approx(1.0)
    assert "| profile: cifar.cuda_graph" in res.stdout
    measures = {m.name: m for m in record.measures}
    assert measures["equal.device"].passes and measures["gpt2.device_exact"].passes
    assert measures["gpt2.device_exact"].proven
    assert (tmp_path / "tests-junit.xml").exists() and (tmp_path / "gpu-check.log").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [record_path.name, record_path.with_suffix(".md").name, "tests-junit.xml",
         "gpu-check.log"])  # four files: the record, its table, the tests' outcomes, the log
    assert "| cifar.cuda_graph | cifar10.cuda_graph: true | ok |" in res.stdout
    assert "| synthetic.cuda_graph | synthetic.cuda_graph: true | fallback |" in res.stdout
    line = next(x for x in res.stdout.splitlines() if x.startswith("| cifar.no_channels_last"))
    assert line.count("FAILS") == 2
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
    cand = rec.Candidate("cifar.fp16", "cifar", "fp16 with loss scaling", "cifar.stacked", "ok",
                         12.0, 1, 10, 500, 10.0, 50.0, 500.0, 20.3, "n", [check])
    profile = rec.Profile("cifar.cuda_graph", "the graph's replays, CUDA kernels", "cuda", 10,
                          15.0, 12.0, [rec.ProfileRow("weight gradient", 6.0, 0.4, 60.0,
                                                      ["sm90_xmma_wgrad_implicit_gemm: 6.000 ms"]),
                                       rec.ProfileRow("idle", 3.0, 0.2, 0.0, [])])
    record = rec.Record(rec.SCHEMA, "complete", False, "cuda", "NVIDIA H100 80GB HBM3",
                        "nvidia-h100-80gb-hbm3", "2.11.0", "13.0", "91000", "3.12.3", "abc",
                        False, "2026-11-27", "10:00:00Z", "h", "cpu", 540.0, 500.0, 10.0,
                        list(rec.DEFAULT_PARTS), {"speed": rec.Part("ok", 300.0, 250.0)}, [],
                        [cand], [], True, profile)
    return record.to_dict()


@pytest.mark.parametrize("damage, message", [
    (lambda d: d.pop("commit"), "missing \\['commit'\\]"),
    (lambda d: d.update(extra=1), "unknown \\['extra'\\]"),
    (lambda d: d["candidates"][0].update(status="fast"), "candidate.status is 'fast'"),
    (lambda d: d["candidates"][0].update(steps_per_s="50"), "expected a number"),
    (lambda d: d["candidates"][0]["checks"][0].update(passes="yes"), "expected bool"),
    (lambda d: d.update(schema="repdist-gpu-check/1"), "this reader knows"),
    (lambda d: d["candidates"][0].update(graphs={"32": {"captured": "yes", "replayed": 1,
                                                        "eager": 3}}), "expected bool"),
    (lambda d: d["profile"]["rows"][0].update(category="fast"), "profile.category is 'fast'"),
    (lambda d: d["profile"].pop("steps"), "missing \\['steps'\\]"),
    (lambda d: d.update(schema="repdist-gpu-check/2"), "a repdist-gpu-check/2 record has no"),
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
    text = md_path.read_text()
    line = next(x for x in text.splitlines() if x.startswith("| cifar.fp16"))
    assert "| 50.0 | 20.30 | - | rounding 1.0e-06 ≤ 3.0e-06: ok |" in line  # no reference here
    assert ("| weight gradient | 6.000 | 40.0 % | 60.0 | sm90_xmma_wgrad_implicit_gemm: "
            "6.000 ms |") in text
    assert "| profile: cifar.cuda_graph, 10 steps, the graph's replays, CUDA kernels |" in text
    assert rec.read(json_path) == record


def small_cifar_stack():
    models = [build_cifar_model(s, 2, 10, 8, 2, effective_bn_momentum(10)).double()
              for s in (0, 1)]
    return StackedModelClass(models)


def test_the_undecided_options_reach_the_model():
    """fp16 and compile, no config keys (candidates.UNDECIDED), reach the stack the check
    builds: float16 autocast of f, its trunk traced (on a CPU) with the state dict's keys
    unchanged; a bad compile mode is refused."""
    cpu = torch.device("cpu")
    plain, _ = gc.cifar_job_stack({}, cpu, torch.float32, 2, 2, 2)
    tried, _ = gc.cifar_job_stack({"fp16": True, "compile": "default"}, cpu, torch.float32,
                                  2, 2, 2)
    assert plain.f_net.autocast_dtype is None and tried.f_net.autocast_dtype == torch.float16
    assert getattr(plain.f_net.body, "_compiled_call_impl", None) is None
    assert tried.f_net.body._compiled_call_impl is not None
    assert list(tried.f_net.body.state_dict()) == list(plain.f_net.body.state_dict())
    float64, _ = gc.cifar_job_stack({"compile": "default"}, cpu, torch.float64, 2, 2, 2)
    assert getattr(float64.f_net.body, "_compiled_call_impl", None) is None
    with pytest.raises(ValueError, match="compile must be one of"):
        plain.f_net.compile_body("fast")


def test_every_undecided_option_has_its_row_and_its_candidates():
    """docs/gpu.md's table of the options to be timed holds each of candidates.UNDECIDED with
    the command that times it, and each candidate it names is one the check runs."""
    text = (ROOT / "docs" / "gpu.md").read_text()
    table = text[text.index("## Options to be timed"):]
    for option in gc.UNDECIDED:
        row = next(x for x in table.splitlines() if x.startswith(f"| `{option.option}`"))
        assert "to be timed" in row and f"`{option.command}`" in row, row
        assert set(option.candidates) <= set(gc.BY_NAME), option


def test_the_rounding_baseline_changes_only_the_order_of_sums():
    """The reference again with each batch's rows reversed (candidates.ReversedBatch): in
    float64 it lands where the reference does (1e-12), so what it measures in float32 is
    rounding, not another computation."""
    size = gc.TOY_SIZE
    ref = gc.check_run("synthetic", {}, size, torch.device("cpu"), torch.float64)
    rev = gc.check_run("synthetic", {}, size, torch.device("cpu"), torch.float64, True)
    assert gc.distance(rev, ref) <= 1e-12
    rev32 = gc.check_run("synthetic", {}, size, torch.device("cpu"), torch.float32, True)
    ref32 = gc.check_run("synthetic", {}, size, torch.device("cpu"), torch.float32)
    assert 0 < gc.distance(rev32, ref32) < 1e-3


def test_the_compile_part_writes_a_record_of_its_own_name():
    data = a_record()
    data["parts_asked"] = ["compile"]
    assert rec.Record.from_dict(data).name == "nvidia-h100-80gb-hbm3-2026-11-27-compile"
    assert gc.part_names("compile")[0] == gc.REFERENCES["cifar"]
    assert not set(gc.part_names("compile")[1:]) & set(gc.part_names("speed"))


def check_args(out: Path, **overrides) -> argparse.Namespace:
    return gpu_check.parse(["--out", str(out), "--toy", *sum(
        ([f"--{k}", v] for k, v in overrides.items()), [])])


def test_without_git_the_commit_is_recorded_as_unknown(tmp_path, monkeypatch):
    """An offline GPU machine need not have git: the check runs, its record says it does not
    know the commit (before: FileNotFoundError before any part ran)."""
    monkeypatch.setenv("PATH", str(tmp_path))  # an empty folder: no git on it
    assert gpu_check.commit() == ("unknown", None)
    check = gpu_check.GpuCheck(check_args(tmp_path), PROBE)
    assert check.record.commit == "unknown" and check.record.dirty is None
    check.save()
    assert rec.read(tmp_path / f"{check.record.name}.json").commit == "unknown"


@pytest.mark.parametrize("statuses, code", [
    (("ok", "ok", "ok", "ok"), 0), (("ok", "failed", "ok", "ok"), 1),
    (("ok", "overran", "failed", "ok"), 1), (("ok", "overran", "ok", "ok"), 3),
    (("ok", "ok", "skipped", "ok"), 3), (("ok", "ok", "ok", "overran"), 3)])
def test_the_exit_status_says_whether_every_part_was_ok(tmp_path, statuses, code):
    check = gpu_check.GpuCheck(check_args(tmp_path), PROBE)
    check.record.parts = {p: rec.Part(s, 1.0, 1.0) for p, s in zip(rec.DEFAULT_PARTS, statuses)}
    assert check.exit_status() == code


@pytest.mark.parametrize("baseline", [0.0, math.nan, math.inf])
def test_a_baseline_that_judges_nothing_makes_its_rows_invalid(tmp_path, monkeypatch, baseline):
    """A reference that diverges (NaN, inf) or lands on itself (0) cannot judge a rounding
    check: the family's rows say `invalid` (before: inf <= 3 inf passed every candidate, and a
    baseline of 0 failed every one)."""
    refs = gc.References(tmp_path, gc.TOY_SIZE, torch.device("cpu"))
    monkeypatch.setattr(refs, "baseline", lambda family: baseline)
    for name in ("synthetic.eager", "synthetic.cuda_graph"):
        row = gc.run_spec(gc.BY_NAME[name], gc.TOY_SIZE, torch.device("cpu"), refs, 0.05, True)
        assert row.status == "invalid" and "not finite and > 0" in row.note, row
        assert row.checks == [] and row.steps_per_s > 0


def test_the_measures_check_at_gpt2s_shapes_is_two_sided():
    """The GPU's exact search against the CPU's estimate: the exact KL equal, t1 at or below
    the estimate, and equal to the every-pivot t1 (before: only `estimate >= exact`)."""
    estimate = {"kl": 0.5, "t1": 8.584}
    every_pivot = (8.016, 5e-4)
    assert gpu_measures.two_sided({"kl": 0.5, "t1": 8.0161}, estimate, every_pivot)[0]
    assert not gpu_measures.two_sided({"kl": 0.5, "t1": 7.9}, estimate, every_pivot)[0]
    assert not gpu_measures.two_sided({"kl": 0.5, "t1": 8.6}, estimate, (8.6, 5e-4))[0]
    passes, note = gpu_measures.two_sided({"kl": 0.5001, "t1": 8.016}, estimate, every_pivot)
    assert not passes and "KL 2.0e-04 from the CPU's (FAILS)" in note


def test_the_plugin_runs_the_long_gpu_tests_last():
    items = [SimpleNamespace(name=n) for n in (pytest_plugin.LAST[1], "a",
                                               pytest_plugin.LAST[0], "b")]
    pytest_plugin.pytest_collection_modifyitems(None, None, items)
    assert [i.name for i in items] == ["a", "b", *pytest_plugin.LAST]


@pytest.mark.slow  # collecting the whole suite twice: CI's `make test-slow`
def test_the_tests_part_runs_every_gpu_test_of_the_suite():
    """gpu_check.gpu_test_files (found by their text) hold every test pytest collects under
    `-m gpu` from the whole suite."""
    def collected(*paths: str) -> set[str]:
        res = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-m",
                              "gpu", "-p", "no:cacheprovider", *paths], cwd=ROOT,
                             capture_output=True, text=True, timeout=600)
        assert res.returncode == 0, res.stdout[-2000:]
        return {line for line in res.stdout.splitlines() if "::" in line}

    everything = collected("tests")
    assert everything and collected(*gpu_check.gpu_test_files()) == everything


def descendants(pid: int) -> list[psutil.Process]:
    try:
        return psutil.Process(pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return []


@pytest.mark.slow  # a toy speed part started and stopped, twice: `make test-slow` (CI)
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_ends_every_part_process_and_keeps_the_record(tmp_path, signum):
    """SIGTERM (a time limit) or SIGINT mid-part: the check ends the part's processes, which
    run in process groups of their own (a worker and the two processes it started), and exits
    128 + the signal with its record kept as partial (before: they outlived it)."""
    proc = subprocess.Popen(check_command(tmp_path, "--parts", "speed", "--only",
                                          "synthetic.slots2"), cwd=ROOT, env=toy_env(),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.monotonic() + 240
    family = []
    while len(family) < 3 and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.2)
        family = descendants(proc.pid)  # the worker and its two timed processes
    assert len(family) >= 3, proc.communicate()[0][-3000:]
    proc.send_signal(signum)
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 128 + signum, out[-3000:]
    gone, alive = psutil.wait_procs(family, timeout=10)
    assert not alive, [p.pid for p in alive]
    (record_path,) = tmp_path.glob("cpu-toy-*.json")
    record = rec.read(record_path)
    assert record.status == "partial"
    assert record.parts["speed"].status == "failed"
    assert signal.Signals(signum).name in record.parts["speed"].note


def test_the_committed_records_are_records_of_their_names():
    """benchmarks/records/: each JSON a record the format accepts, named as the check names it
    (a part run again gets its parts in the name, in characters a file system keeps), with its
    table beside it; and a name of two parts is their name joined by '-'."""
    found = sorted(p for p in (ROOT / "benchmarks" / "records").glob("*.json")
                   if not p.name.startswith("timings-"))  # make timings' (tests/test_timings.py)
    for path in found:
        record = rec.Record.from_dict(json.loads(path.read_text()))
        assert record.name == path.stem
        assert path.with_suffix(".md").is_file(), path
        assert all(c.isalnum() or c in "-._" for c in path.stem), path.stem
    data = a_record()
    data["parts_asked"] = ["tests", "speed"]
    assert rec.Record.from_dict(data).name == "nvidia-h100-80gb-hbm3-2026-11-27-tests-speed"


# -- the candidates' keys --------------------------------------------------------------------

def test_cudnn_benchmark_tries_every_algorithm():
    """The cudnn_benchmark candidate: cuDNN's benchmark with no limit on the algorithms it times;
    off: PyTorch's defaults again (the check's later candidates run without it)."""
    from repdist.training.devices import set_cudnn_benchmark

    try:
        set_cudnn_benchmark(True)
        assert torch.backends.cudnn.benchmark and torch.backends.cudnn.benchmark_limit == 0
    finally:
        set_cudnn_benchmark(False)
    assert not torch.backends.cudnn.benchmark and torch.backends.cudnn.benchmark_limit == 10


def test_the_elementwise_compile_leaves_convolutions_to_aten():
    """compile: elementwise is inductor without autotuning and without CUDA graphs of its own,
    its convolutions ATen's (never Triton's template); every inductor compile of the body pins
    the convolutions to ATen; a traced-only backend takes none of inductor's settings."""
    from repdist.models import stacked_resnet

    options = stacked_resnet.compile_arguments("elementwise")["options"]
    assert options == {"max_autotune": False, "triton.cudagraphs": False,
                       "max_autotune_conv_backends": "ATEN"}
    assert stacked_resnet.compile_arguments("max-autotune-no-cudagraphs") == {
        "mode": "max-autotune-no-cudagraphs"}
    assert stacked_resnet.compile_arguments("elementwise", "eager") == {"backend": "eager"}
    import torch._inductor.config as inductor

    saved = inductor.max_autotune_conv_backends
    try:
        inductor.max_autotune_conv_backends = "ATEN,TRITON"
        small_cifar_stack().f_net.compile_body("max-autotune-no-cudagraphs")
        assert inductor.max_autotune_conv_backends == "ATEN"
    finally:
        inductor.max_autotune_conv_backends = saved


def test_the_new_candidates_are_judged_as_their_arithmetic_asks():
    """cudnn_benchmark (other sums, the same arithmetic): rounding; fp16 (a precision of its
    own): the trained models; the elementwise compile: the compile part. Each beside the graph
    the default runs, and the undecided ones before what a record decided."""
    spec = gc.BY_NAME
    assert (spec["cifar.cudnn_benchmark"].judge, spec["cifar.cudnn_benchmark"].exact) == (
        "rounding", False)
    assert spec["cifar.fp16"].judge == "measures"
    assert spec["cifar.compile.elementwise"].part == "compile"
    new = ("cifar.cudnn_benchmark", "cifar.fp16", "cifar.compile.elementwise")
    assert all(spec[n].needs_graph for n in new)
    speed = gc.part_names("speed")
    assert speed.index("cifar.fp16") < speed.index("synthetic.slots4")


# -- the profile part ------------------------------------------------------------------------

CUDA_KERNELS = {  # as the profiler names them on a GPU (cuDNN 9, ATen, cuBLAS)
    "sm90_xmma_fprop_implicit_gemm_tf32f32_tf32f32_f32_nhwckrsc_nhwc_tilesize128x128x32_"
    "warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cudnn": "convolution forward",
    "void cudnn::cnn::conv2d_grouped_direct_kernel<false, true, false, false, 0, 0, int, float, "
    "float, float, float, float, float>(cudnn::cnn::GroupedDirectFpropParams, float const*, "
    "float const*, float*, float, float*, float const*, float const*, float)":
        "convolution forward",
    "void cudnn::detail::implicit_convolve_sgemm<float, float, 128, 5, 5, 3, 3, 3, 1, false, "
    "false, true>(int, int, int, float const*, int, float*, float const*, kernel_conv_params, "
    "unsigned long long, int, float, float, int, float const*, float const*, bool, int, int)":
        "convolution forward",
    "sm80_xmma_dgrad_implicit_gemm_indexed_tf32f32_tf32f32_f32_nhwckrsc_nchw_tilesize64x32x64_"
    "stage4_warpsize2x2x1_g1_tensor16x8x8_kernel": "data gradient",
    "void cudnn::detail::dgrad_engine<float, 128, 6, 7, 3, 3, 5, false>(int, int, int, float "
    "const*, int, float const*, int, float*, kernel_grad_params, unsigned long long, int, "
    "unsigned long long, int, float, int, int, int)": "data gradient",
    "sm90_xmma_wgrad_implicit_gemm_tf32f32_tf32f32_f32_nhwckrsc_nhwc_tilesize128x128x32_"
    "warpgroupsize1x1x1_kernel__5x_cudnn": "weight gradient",
    "void cudnn::detail::wgrad_alg0_engine<float, 128, 5, 5, 3, 3, 3, false, 512>(int, int, "
    "int, float const*, int, float*, float const*, kernel_grad_params, unsigned long long, int, "
    "float, int, int, int*, int*)": "weight gradient",
    "void cudnn::winograd_nonfused::winogradWgradData4x4<float, float>(cudnn::winograd_nonfused"
    "::WinogradDataParams<float, float>)": "weight gradient",
    "void cudnn::bn_fw_tr_1C11_kernel_NCHW<float, float, int, 512, true, 1>(cudnnTensorStruct, "
    "float const*, cudnnTensorStruct, float*, float const*, float const*, float, float, float*, "
    "float*, float*, float*, float, float)": "BatchNorm",
    "void cudnn::bn_bw_1C11_kernel_new<float, float, float2, 512, true, 1>(float, float, float, "
    "float, cudnnTensorStruct, float const*, cudnnTensorStruct, float const*, cudnnTensorStruct,"
    " float*, float const*, float*, float*, float const*, float const*, float)": "BatchNorm",
    "void at::native::batch_norm_backward_reduce_channels_last_kernel<4, float, float, float>"
    "(float const*, float const*, float const*, float const*, float*, float*, float*, float*, "
    "int*, int, int)": "BatchNorm",
    "void at::native::vectorized_elementwise_kernel<4, at::native::(anonymous namespace)::"
    "launch_clamp_scalar(at::TensorIteratorBase&, c10::Scalar, c10::Scalar, "
    "at::native::detail::ClampLimits)::{lambda()#1}::operator()() const::{lambda()#7}::"
    "operator()() const::{lambda(float)#1}, std::array<char*, 2ul> >(int, "
    "at::native::(anonymous namespace)::launch_clamp_scalar, std::array<char*, 2ul>)":
        "elementwise",
    "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::MeanOps<"
    "float, float, float, float>, unsigned int, float, 4, 4> >(at::native::ReduceOp<float, "
    "at::native::MeanOps<float, float, float, float>, unsigned int, float, 4, 4>)":
        "elementwise",
    "void at::native::(anonymous namespace)::CatArrayBatchedCopy<at::native::(anonymous "
    "namespace)::OpaqueType<4u>, unsigned int, 4, 64, 64>(...)": "elementwise",
    "void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous "
    "namespace)::TensorListMetadata<5>, at::native::(anonymous namespace)::FusedAdamMathFunctor"
    "<float, 5, (at::native::ADAM_MODE)0, false>, double*, double, double, double, double, "
    "double, bool, float const*, float const*>(...)": "optimiser",
    "void at::native::amp_update_scale_cuda_kernel(float*, int*, float const*, double, double, "
    "int)": "optimiser",
    "sm90_xmma_gemm_f32f32_tf32f32_f32_tn_n_tilesize64x64x32_warpgroupsize1x1x1_execute_"
    "segment_k_off_kernel__5x_cublas": "other",
    "void cudnn::ops::nchwToNhwcKernel<float, float, float, false, true, "
    "(cudnnKernelDataType_t)2>(cudnn::ops::nchw2nhwc_params_t<float>, float const*, float*)":
        "other",
    "Memcpy DtoD (Device -> Device)": "other",
    "triton_poi_fused_add_relu_threshold_backward_7": "elementwise",
}
CPU_OPERATORS = {  # ATen's, as the profiler names them on a CPU (the toy run)
    "aten::mkldnn_convolution": "convolution forward", "aten::convolution":
        "convolution forward", "aten::_slow_conv2d_forward": "convolution forward",
    "aten::convolution_backward": "convolution backward",
    "autograd::engine::evaluate_function: ConvolutionBackward0": "convolution backward",
    "aten::native_batch_norm": "BatchNorm", "aten::native_batch_norm_backward": "BatchNorm",
    "aten::_batch_norm_with_update": "BatchNorm", "aten::_fused_adam_": "optimiser",
    "Optimizer.step#Adam.step": "optimiser", "aten::_foreach_add_": "optimiser",
    "aten::_amp_foreach_non_finite_check_and_unscale_": "optimiser", "aten::add_":
        "elementwise", "aten::clamp_min": "elementwise", "aten::threshold_backward":
        "elementwise", "aten::index": "elementwise", "aten::baddbmm": "other", "aten::addmm":
        "other", "aten::empty": "other", "aten::as_strided": "other",
}


@pytest.mark.parametrize("names", [CUDA_KERNELS, CPU_OPERATORS], ids=["cuda", "cpu"])
def test_the_profile_groups_kernels_by_name(names):
    """profiling.category on names as the profiler gives them: cuDNN's fprop/dgrad/wgrad,
    BatchNorm (cuDNN's and ATen's channels-last reductions), elementwise kernels, the fused
    Adam and the loss scaler; ATen's operators on a CPU."""
    found = {name: gpu_profiling.category(name) for name in names}
    assert {n: c for n, c in found.items() if c != names[n]} == {}
    assert set(found.values()) <= set(rec.PROFILE_CATEGORIES) - {"idle"}


def test_the_profile_counts_overlapping_kernels_once_and_the_rest_as_idle():
    """A window of 10 ms over 2 steps: a forward kernel 0-4 ms and a wgrad kernel 2-5 ms on
    another stream (busy 5 ms, not 7), an Adam kernel 6-7 ms: idle 4 ms; outside the window
    nothing counts. On a CPU an operator counts its own time (its children's not twice)."""
    s = gpu_profiling.Span
    kernels = [s("sm80_xmma_fprop_implicit_gemm", 1000, 5000, 4000),
               s("sm80_xmma_wgrad_implicit_gemm", 3000, 6000, 3000),
               s("multi_tensor_apply_kernel<FusedAdamMathFunctor>", 7000, 8000, 1000),
               s("sm80_xmma_dgrad_implicit_gemm", 12000, 13000, 1000)]
    rows, busy = gpu_profiling.breakdown(kernels, (1000, 11000), 2, on_device=True)
    ms = {r.category: r.ms_per_step for r in rows}
    assert ms == pytest.approx({"convolution forward": 2.0, "weight gradient": 1.5,
                                "optimiser": 0.5, "idle": 2.0})
    assert busy == pytest.approx(3.0) and [r.category for r in rows][-1] == "idle"
    ops = [s("aten::convolution", 0, 4000, 500), s("aten::mkldnn_convolution", 100, 3900, 3500)]
    rows, busy = gpu_profiling.breakdown(ops, (0, 5000), 1, on_device=False)
    assert {r.category: r.ms_per_step for r in rows} == pytest.approx(
        {"convolution forward": 4.0, "idle": 1.0})


def test_the_profile_of_the_toy_job_covers_its_window():
    """The profile part's worker on the CPU (toy size): the CIFAR job with its graph-ready step,
    its operators' categories and idle adding up to the window's wall time."""
    found = gpu_profiling.profile_job(toy=True, device=torch.device("cpu"))
    assert found.job == gpu_profiling.JOB and gc.BY_NAME[found.job].needs_graph
    shares = {r.category: r.share for r in found.rows}
    assert sum(shares.values()) == pytest.approx(1.0)
    assert shares["convolution forward"] > 0 and shares["convolution backward"] > 0
    assert shares["BatchNorm"] > 0 and shares["optimiser"] > 0
    assert found.busy_ms_per_step < found.window_ms_per_step
    assert "aten::_fused_adam_" in " ".join(next(r for r in found.rows
                                                 if r.category == "optimiser").top)


def test_the_profile_reads_kernels_not_the_gpus_copies_of_its_ranges():
    """On CUDA the profiler shows each range (the window, Adam's step) on the GPU too, as a user
    annotation over the kernels it holds: the window is the host's, the annotations are no
    kernels; on a CPU the operators are read by their own time."""
    from torch.autograd import DeviceType

    def event(name, start, end, device=DeviceType.CUDA, annotation=False, own=0.0):
        return SimpleNamespace(name=name, device_type=device, is_user_annotation=annotation,
                               self_cpu_time_total=own, time_range=SimpleNamespace(
                                   start=start, end=end, elapsed_us=lambda: end - start))

    window = gpu_profiling.WINDOW
    events = [event(window, 10, 90, DeviceType.CPU, True), event(window, 20, 60, annotation=True),
              event("Optimizer.step#Adam.step", 50, 60, annotation=True),
              event("sm90_xmma_fprop_implicit_gemm", 20, 40), event("aten::conv2d", 12, 30,
                                                                    DeviceType.CPU, own=3.0)]
    spans, bounds = gpu_profiling.spans_of(events, on_device=True)
    assert bounds == (10, 90) and [s.name for s in spans] == ["sm90_xmma_fprop_implicit_gemm"]
    spans, _ = gpu_profiling.spans_of(events, on_device=False)
    assert [(s.name, s.own) for s in spans] == [("aten::conv2d", 3.0)]
