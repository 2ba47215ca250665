"""`make timings` (repdist_dev.timings): its records' format, what it reads from a command's
output, and the README's and docs/speed.md's timing tables, which must be the newest committed
record rendered (python -m repdist_dev.timings --render-only)."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from repdist_dev import timings

ROOT = Path(__file__).resolve().parents[1]


def a_record(**changes) -> dict:
    entry = {"command": "make test", "wall_s": 286.3, "exit": 0,
             "tests": {"passed": 698, "deselected": 26}, "jobs": None, "cpu_s": None,
             "branches": None, "quick_dag_s": 263.2, "note": ""}
    quick = {**entry, "command": "make quick", "wall_s": 177.0, "tests": None, "jobs": 109,
             "cpu_s": 263.2, "branches": {"lm": [22, 57.4], "synthetic": [17, 39.9]},
             "quick_dag_s": None}
    return {"schema": timings.SCHEMA, "commit": "a" * 40, "date": "2026-11-27",
            "started_utc": "2026-11-27T23:00:00+00:00", "cpu": "AMD EPYC",
            "vector_extensions": ["AVX2", "FMA"], "cores": 2,
            "memory_gib": 23.4, "python": "3.11.7", "torch": "2.13.0+cpu", "startup_cpu_s": 2.04,
            "commands": [entry, quick], "floors": None, **changes}


def some_floors() -> dict:
    row = {"benchmark": "bar workload", "flops": 1.21e9, "bytes": 1.4e8, "floor_s": 0.0126,
           "measured_s": 0.6025, "fraction_of_floor": 0.0209, "original_s": 64.9, "speedup": 108}
    gpt2 = {"benchmark": "GPT-2 shapes", "flops": 2.2e12, "bytes": 7.4e8, "floor_s": 21.9,
            "measured_s": 68.1, "fraction_of_floor": 0.32, "label_sets": 18,
            "peak_rss_gib": 3.27}
    return {"machine": "x86_64", "rows": [row, gpt2],
            "peaks": {"gemm_f64_gflops": 96.3, "gemm_f64_1thread_gflops": 51.4,
                      "gemm_f32_gflops": 196.4, "gemm_f32_1thread_gflops": 101.1,
                      "bandwidth_gbs": 25.7}}


def test_a_record_is_checked_field_by_field():
    assert timings.check(a_record())["cores"] == 2
    for damage, message in ((lambda r: r.pop("commit"), "missing \\['commit'\\]"),
                            (lambda r: r.update(extra=1), "unknown \\['extra'\\]"),
                            (lambda r: r.update(cores="2"), "cores is str"),
                            (lambda r: r["commands"][0].pop("wall_s"), "missing \\['wall_s'\\]"),
                            (lambda r: r.update(schema="other/1"), "schema")):
        record = copy.deepcopy(a_record())
        damage(record)
        with pytest.raises(timings.RecordError, match=message):
            timings.check(record)
    assert timings.record_path(a_record(), Path("/r")) == Path(
        "/r/timings-amd-epyc-2026-11-27.json")
    old = {k: v for k, v in a_record(schema="repdist-timings/1").items()
           if k not in ("vector_extensions", "floors")}
    assert timings.check(old)["vector_extensions"] == []  # an older record is still read
    two = {k: v for k, v in a_record(schema="repdist-timings/2").items() if k != "floors"}
    assert timings.check(two)["floors"] is None


def test_a_second_run_the_same_day_keeps_the_first_runs_record(tmp_path):
    """The day's first record keeps its name; a later run's (another start) adds its commit."""
    first = a_record()
    assert timings.record_path(first, tmp_path).name == "timings-amd-epyc-2026-11-27.json"
    timings.record_path(first, tmp_path).write_text(json.dumps(first))
    assert timings.record_path(first, tmp_path).name == "timings-amd-epyc-2026-11-27.json"
    later = {**first, "started_utc": "2026-11-27T23:50:00+00:00", "commit": "b" * 40}
    assert timings.record_path(later, tmp_path).name == (
        "timings-amd-epyc-2026-11-27-bbbbbbb.json")


def test_the_cpus_vector_extensions_are_read_from_its_flags(tmp_path):
    info = tmp_path / "cpuinfo"
    info.write_text("processor\t: 0\nflags\t\t: fpu sse2 avx fma avx2 bmi2\n")
    assert timings.vector_extensions(info) == ["AVX2", "FMA"]
    info.write_text("flags\t: fpu avx2 fma avx512f avx512bw\n")
    assert timings.vector_extensions(info) == ["AVX2", "FMA", "AVX-512"]
    assert timings.vector_extensions(tmp_path / "none") == []


def test_what_a_command_printed_is_read():
    out = "....\n[100%]\n698 passed, 26 deselected, 18 warnings in 286.34s (0:04:46)\n"
    assert timings._tests(out) == {"passed": 698, "deselected": 26}
    assert timings._tests("1 failed, 3 passed, 1 error in 2.00s\n") == {
        "failed": 1, "passed": 3, "errors": 1}
    assert timings._tests("make: *** [Makefile:79: test] Error 2\n") is None
    slurm = ("slurm_check: local run (profiles/workstation, --cores 2): 185 s\n"
             "slurm_check: SLURM run (profiles/slurm, partitions cpu/gpu): 499 s\n")
    assert timings._slurm_note(slurm) == "local run 3 min 05 s; SLURM run 8 min 19 s"
    assert [timings.duration(s) for s in (48.4, 65, 4853)] == ["48 s", "1 min 05 s",
                                                               "1 h 20 min"]


def test_the_table_says_what_ran_where():
    block = timings.render(ROOT / "benchmarks/records/x.json", a_record())
    assert block.startswith(timings.BEGIN) and block.endswith(timings.END)
    assert "| `make test` | 4 min 46 s | 698 passed, 26 deselected; the quick DAG beside them " \
           "4 min 23 s |" in block
    assert "| `make quick` | 2 min 57 s | 109 jobs, 4 min 23 s of CPU in its jobs |" in block
    assert "at commit aaaaaaa, AMD EPYC (AVX2, FMA), 2 cores, 23 GiB" in block
    assert "lm 57 s (22), synthetic 40 s (17)" in block
    assert "one torch job's start-up took 2.04 s of CPU there" in block
    assert "start-up" not in timings.render(ROOT / "x.json", a_record(startup_cpu_s=None))
    failed = a_record()
    failed["commands"][0]["exit"] = 2
    assert "**exit status 2**" in timings.render(ROOT / "x.json", failed)
    with pytest.raises(SystemExit, match="no '<!-- timings: begin"):
        timings.replace_block("no markers here", block, "X.md")


def test_the_floors_table_says_each_benchmark_beside_its_floor():
    block = timings.render_floors(ROOT / "benchmarks/records/x.json",
                                  a_record(floors=some_floors()))
    assert block.startswith(timings.FLOORS_BEGIN) and block.endswith(timings.FLOORS_END)
    assert "| bar workload | 1.21 GFLOP, 140 MB | 12.6 ms | 602 ms | 2.1 % |" in block
    assert "| GPT-2 shapes | 2.2e+03 GFLOP, 740 MB | 21.9 s | 68.1 s | 32 % |" in block
    assert "float64 GEMM 96 GFLOP/s on every core (51 on one)" in block
    assert "the original's code 64.9 s on the same pairs in the same run, 108x" in block
    assert "m_SVD_f over 18 label sets, peak RSS 3.27 GiB" in block


def test_the_readme_and_speed_tables_are_the_newest_record():
    """Every committed record has the format and its name; the README's and docs/speed.md's
    tables are the newest rendered (after a new record: --render-only)."""
    found = sorted((ROOT / "benchmarks" / "records").glob(f"{timings.PREFIX}*.json"))
    assert found, "no timings record: run make timings"
    for path in found:
        assert timings.record_path(timings.check(json.loads(path.read_text())),
                                   path.parent) == path
    path, record = timings.newest()
    block = timings.render(path, record)
    for target in timings.rendered_files():
        text = target.read_text()
        start, end = text.find(timings.BEGIN), text.find(timings.END)
        assert 0 <= start < end, f"{target.name}: no timings block"
        assert text[start:end + len(timings.END)] == block, (
            f"{target.name}'s timings are not {path.name}'s: python -m repdist_dev.timings "
            "--render-only")
    found = timings.newest(with_floors=True)
    if found is not None:
        text = timings.floors_file().read_text()
        start, end = text.find(timings.FLOORS_BEGIN), text.find(timings.FLOORS_END)
        assert 0 <= start < end, "docs/speed.md: no floors block"
        assert text[start:end + len(timings.FLOORS_END)] == timings.render_floors(*found), (
            f"docs/speed.md's floors are not {found[0].name}'s: python -m repdist_dev.timings "
            "--render-only")
