"""The record `make gpu-check` writes (repdist_gpucheck.check): its format, and its short table.
A record is one JSON object, `Record` below; the table is printed last and kept beside it as
Markdown. `Record.from_dict` refuses any missing, extra or mistyped field, so a toy run on a CPU
(tests/test_gpu_check.py) keeps the format a GPU run will write. Defaults change on what a
committed record shows (docs/gpu.md)."""

from __future__ import annotations

import json
import math
import os
import tempfile
import types
import typing
from collections import Counter
from dataclasses import MISSING, asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

SCHEMA = "repdist-gpu-check/3"
PART_NAMES = ("tests", "speed", "measures", "profile", "compile")  # in the order they run
DEFAULT_PARTS = ("tests", "speed", "measures", "profile")  # one command; compile is the second
# formats this reader also reads, each with its default parts (the record's name omits them)
OLDER_SCHEMAS = {"repdist-gpu-check/2": ("tests", "speed", "measures")}  # no profile part
# where a step's time goes (repdist_gpucheck.profiling.category): kernels on a GPU, ATen
# operators on a CPU, whose convolution backward is one operator for both gradients
PROFILE_CATEGORIES = ("convolution forward", "data gradient", "weight gradient",
                      "convolution backward", "BatchNorm", "elementwise", "optimiser", "other",
                      "idle")
PART_STATUSES = ("ok", "failed", "overran", "skipped", "not run")
# fallback: a CUDA-graph candidate whose capture failed (its timing is the eager step's); invalid:
# its family's rounding baseline is not finite and > 0 (no rounding check of it is judged)
CANDIDATE_STATUSES = ("ok", "fallback", "invalid", "failed", "overran", "skipped",
                      "unavailable")
CHECK_KINDS = ("float64", "rounding", "baseline", "measures", "none")
TEST_OUTCOMES = ("passed", "failed", "skipped", "error", "overran")
FAMILIES = ("synthetic", "cifar")


class RecordError(ValueError):
    """A record that does not have the format (a field missing, extra, of the wrong type)."""


@dataclass
class Check:
    """A numerical check of a candidate against its family's reference path, after `steps`
    training steps from the same initialisation and batches. By `kind`:
    - float64: the largest relative distance of any model's parameters and BatchNorm buffers;
      passes within `tolerance`.
    - rounding: the same in the production precision; `tolerance` is a multiple of `baseline`,
      the distance between two reference runs whose sums differ only in order.
    - baseline: the reference's own row.
    - measures (fp16): the largest KL and d_LLV between a seed trained by the candidate and by
      the reference (`distance`: d_LLV); passes when both are below the smallest between two
      reference seeds (`baseline`: d_LLV).
    - none: no check (`note` says why).
    `passes` None: informational (`note` says what it shows)."""

    kind: str
    steps: int
    distance: float | None
    baseline: float | None  # rounding: the second reference run has each batch's rows reversed
    tolerance: float | None
    passes: bool | None
    note: str = ""
    values: dict[str, float] = field(default_factory=dict)  # "measures": KL, d_LLV, m_CCA(f)

    def __post_init__(self) -> None:
        _one_of("check.kind", self.kind, CHECK_KINDS)


@dataclass
class GraphSize:
    """One batch size of a CUDA-graph candidate's timed run: whether its step was captured,
    how many steps replayed the graph, how many ran eagerly (warm-up, after a failed capture;
    every step on a CPU, where nothing is captured)."""

    captured: bool
    replayed: int
    eager: int


@dataclass
class Candidate:
    """One way of running a family's training job, timed: `steps_per_s` per process (each of
    `processes` running the job at once), `model_steps_per_s` over all of them, and the paper's
    training time extrapolated from it (`paper_minutes`, how: `paper_note`)."""

    name: str
    family: str
    key: str  # the config key and value that selects it ("" for the reference)
    reference: str  # the candidate it is checked against ("" for a reference)
    status: str
    seconds: float  # wall time spent on it, checks and warm-up included
    processes: int
    models_per_job: int
    steps_timed: int | None
    seconds_timed: float | None
    steps_per_s: float | None
    model_steps_per_s: float | None
    paper_minutes: float | None
    paper_note: str
    checks: list[Check] = field(default_factory=list)
    note: str = ""
    graphs: dict[str, GraphSize] = field(default_factory=dict)  # by batch size (CUDA graphs)
    capture_error: str = ""  # the first failed capture's error (then the status is fallback)

    def __post_init__(self) -> None:
        _one_of("candidate.family", self.family, FAMILIES)
        _one_of("candidate.status", self.status, CANDIDATE_STATUSES)

    @property
    def within_reference(self) -> bool | None:
        """Every judged check passed (None: nothing was judged)."""
        done = [c.passes for c in self.checks if c.kind in ("float64", "rounding", "measures")
                and c.passes is not None]
        return None if not done else all(done)


@dataclass
class TestResult:
    name: str
    outcome: str
    seconds: float
    message: str = ""

    def __post_init__(self) -> None:
        _one_of("test.outcome", self.outcome, TEST_OUTCOMES)


@dataclass
class MeasureRow:
    """One `compare` run at a size: where (`device`), how far the pivot search went
    (`max_pivots`, `proven`), the wall time, and the numbers to compare between rows."""

    name: str
    n: int
    k: int
    m: int
    device: str
    max_pivots: int
    status: str
    seconds: float | None
    kl: float | None
    t1: float | None
    d_llv: float | None
    y_pivot: int | None
    proven: bool | None
    rel_diff: float | None  # against `against`
    against: str
    passes: bool | None
    note: str = ""

    def __post_init__(self) -> None:
        _one_of("measure.status", self.status, CANDIDATE_STATUSES)


@dataclass
class ProfileRow:
    """One category of the profiled steps: its time a step, its share of the profiled window's
    wall time, how many kernels (operators on a CPU) it ran a step, its longest by name."""

    category: str
    ms_per_step: float
    share: float
    count_per_step: float
    top: list[str]  # "name: ms a step", the longest first (names shortened)

    def __post_init__(self) -> None:
        _one_of("profile.category", self.category, PROFILE_CATEGORIES)


@dataclass
class Profile:
    """Where the time of a few steps of a candidate's job goes (`job`, a candidate's name), by
    kernel name on a GPU, in categories (PROFILE_CATEGORIES); `source` says what was profiled
    (the graph's replays, or the eager step where the replays showed no kernels; on a CPU its
    operators), `idle` the window's wall time that no kernel covered (on a CPU: no operator)."""

    job: str
    source: str
    device: str
    steps: int
    window_ms_per_step: float
    busy_ms_per_step: float
    rows: list[ProfileRow]
    note: str = ""


@dataclass
class Part:
    status: str
    slice_s: float
    seconds: float
    note: str = ""

    def __post_init__(self) -> None:
        _one_of("part.status", self.status, PART_STATUSES)


@dataclass
class Record:
    schema: str
    status: str  # partial (written as results come) | complete
    toy: bool  # the CPU toy run (REPDIST_GPU_TESTS_DEVICE=cpu): checks the check, not a GPU
    device: str
    gpu: str
    gpu_slug: str
    torch: str
    cuda: str
    cudnn: str
    python: str
    commit: str  # "unknown" where git is not there to ask
    dirty: bool | None  # uncommitted changes to tracked files (None: unknown)
    date: str
    started: str
    host: str
    cpu: str
    budget_s: float
    wall_s: float
    timing_s: float  # each candidate's timed window
    parts_asked: list[str]  # --parts: the record's name says which when not the default
    parts: dict[str, Part]
    tests: list[TestResult]
    candidates: list[Candidate]
    measures: list[MeasureRow]
    graph_option: bool  # RunOptions has cuda_graph (the captured step)
    profile: Profile | None = None  # the profile part's (None: not run, or an older format)

    def __post_init__(self) -> None:
        if self.schema not in (SCHEMA, *OLDER_SCHEMAS):
            raise RecordError(f"schema is {self.schema!r}, this reader knows {SCHEMA!r} and "
                              f"{', '.join(map(repr, OLDER_SCHEMAS))}")
        if self.schema in OLDER_SCHEMAS and self.profile is not None:
            raise RecordError(f"a {self.schema} record has no profile")
        _one_of("record.status", self.status, ("partial", "complete"))
        unknown = set(self.parts) - set(PART_NAMES)
        if unknown:
            raise RecordError(f"unknown parts {sorted(unknown)}")

    @property
    def name(self) -> str:
        """The file name's stem: <gpu-slug>-<date>, and -<parts> when not its format's default
        parts (the compile part's record, a part run again) so that one does not replace
        another."""
        defaults = OLDER_SCHEMAS.get(self.schema, DEFAULT_PARTS)
        suffix = "" if self.parts_asked == list(defaults) else "-" + "-".join(
            self.parts_asked)
        return f"{self.gpu_slug}-{self.date}{suffix}"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Any) -> Record:
        return build(cls, data, "record")


def _one_of(name: str, value: Any, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise RecordError(f"{name} is {value!r}, not one of {allowed}")


def build(kind: Any, data: Any, where: str) -> Any:
    """`kind` (a dataclass, list[...], dict[str, ...], optional or plain type) from JSON data,
    refusing what does not fit."""
    origin, args = typing.get_origin(kind), typing.get_args(kind)
    if origin in (typing.Union, types.UnionType):
        if data is None and type(None) in args:
            return None
        return build(next(a for a in args if a is not type(None)), data, where)
    if origin is list:
        if not isinstance(data, list):
            raise RecordError(f"{where}: expected a list, got {type(data).__name__}")
        return [build(args[0], item, f"{where}[{i}]") for i, item in enumerate(data)]
    if origin is dict:
        if not isinstance(data, dict):
            raise RecordError(f"{where}: expected an object, got {type(data).__name__}")
        return {str(k): build(args[1], v, f"{where}.{k}") for k, v in data.items()}
    if isinstance(kind, type) and hasattr(kind, "__dataclass_fields__"):
        if not isinstance(data, dict):
            raise RecordError(f"{where}: expected an object, got {type(data).__name__}")
        hints = typing.get_type_hints(kind)
        names = {f.name for f in fields(kind)}
        required = {f.name for f in fields(kind)
                    if f.default is MISSING and f.default_factory is MISSING}
        missing, extra = required - set(data), set(data) - names
        if missing or extra:
            raise RecordError(f"{where}: missing {sorted(missing)}, unknown {sorted(extra)}")
        try:
            return kind(**{k: build(hints[k], v, f"{where}.{k}") for k, v in data.items()})
        except TypeError as err:
            raise RecordError(f"{where}: {err}") from err
    if kind is float:
        if isinstance(data, bool) or not isinstance(data, int | float):
            raise RecordError(f"{where}: expected a number, got {data!r}")
        return float(data)
    if kind in (int, bool, str) and not (type(data) is kind):
        raise RecordError(f"{where}: expected {kind.__name__}, got {data!r}")
    return data


def read(path: str | Path) -> Record:
    return Record.from_dict(json.loads(Path(path).read_text()))


def write_atomic(path: Path, text: str) -> None:
    """Write `text` to `path` through a temporary file in the same folder and a rename: a run
    cut short leaves the previous complete file, never half of one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "w") as handle:
            handle.write(text)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write(record: Record, folder: Path) -> tuple[Path, Path]:
    """<folder>/<name>.json and .md, each atomically; the record is checked first."""
    data = record.to_dict()
    Record.from_dict(json.loads(json.dumps(data)))  # what is written reads back
    json_path, md_path = folder / f"{record.name}.json", folder / f"{record.name}.md"
    write_atomic(json_path, json.dumps(data, indent=1, allow_nan=True) + "\n")
    write_atomic(md_path, markdown(record))
    return json_path, md_path


def _num(value: float | None, digits: int = 1) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    return f"{value:,.{digits}f}"


def _sci(value: float | None) -> str:
    return "-" if value is None else f"{value:.1e}"


def check_text(c: Candidate) -> str:
    """The candidate's checks in a few characters each."""
    parts = []
    for check in c.checks:
        if check.kind == "baseline":
            parts.append(f"rounding baseline {_sci(check.baseline)}")
        elif check.kind == "none":
            parts.append(check.note or "not checked")
        elif check.kind == "measures" and check.passes is not None:
            v = check.values
            sign, verdict = ("<", "ok") if check.passes else ("≥", "FAILS")
            parts.append(f"same seed KL {_sci(v.get('kl'))}, d_LLV {_sci(v.get('d_llv'))} "
                         f"{sign} between seeds {_sci(v.get('kl_seeds'))}, "
                         f"{_sci(v.get('d_llv_seeds'))}: {verdict}")
        elif check.passes is None and check.distance is not None:  # informational
            parts.append(f"{check.kind} {_sci(check.distance)} (reference "
                         f"{_sci(check.baseline)})")
        elif check.passes is None:
            parts.append(f"{check.kind}: {check.note or 'not run'}")
        else:
            sign, verdict = ("≤", "ok") if check.passes else (">", "FAILS")
            parts.append(f"{check.kind} {_sci(check.distance)} {sign} "
                         f"{_sci(check.tolerance)}: {verdict}")
    if c.graphs:
        sizes = ", ".join(f"{size} {'captured' if g.captured else 'eager'} ({g.replayed:,} "
                          f"replayed)" for size, g in c.graphs.items())
        parts.append(f"graphs: {sizes}")
    if c.capture_error:
        parts.append(f"capture failed: {c.capture_error[:120]}")
    return "; ".join(parts)


def table(record: Record) -> str:
    """The short table: every candidate (steps/s, the paper's minutes, how many times faster
    than its family's reference in this record, its checks), the measures, and the tests'
    tally."""
    lines = []
    if record.candidates:
        lines += ["| candidate | config | status | steps/s | paper, min | speed-up | check |",
                  "|---|---|---|---|---|---|---|"]
    minutes = {c.name: c.paper_minutes for c in record.candidates}
    for c in record.candidates:
        rate = _num(c.steps_per_s, 1)
        if c.processes > 1 and c.steps_per_s is not None:
            rate += f" ×{c.processes}"
        ref = minutes.get(c.reference) if c.reference else c.paper_minutes
        gain = (f"{ref / c.paper_minutes:.2f}×" if ref and c.paper_minutes else "-")
        lines.append(f"| {c.name} | {c.key or 'the reference'} | {c.status} | {rate} | "
                     f"{_num(c.paper_minutes, 2)} | {gain} | "
                     f"{'; '.join(filter(None, [check_text(c), c.note])) or '-'} |")
    if record.measures:
        lines += [""] if lines else []
        lines += ["| measures | N, K, M | device | pivots | status | seconds | t1 | check |",
                  "|---|---|---|---|---|---|---|---|"]
        for r in record.measures:
            check = ("-" if r.passes is None else
                     f"{_sci(r.rel_diff)} from {r.against}: {'ok' if r.passes else 'FAILS'}")
            proven = "" if r.proven is None else (" (exact)" if r.proven else " (estimate)")
            lines.append(f"| {r.name} | {r.n:,}, {r.k:,}, {r.m:,} | {r.device} | "
                         f"{r.max_pivots:,}{proven} | {r.status} | {_num(r.seconds, 2)} | "
                         f"{_num(r.t1, 4)} | {check} |")
    if record.profile is not None:
        lines += [""] if lines else []
        lines += profile_table(record.profile)
    tally = Counter(t.outcome for t in record.tests)
    tests = ", ".join(f"{n} {k}" for k, n in sorted(tally.items())) or "none run"
    parts = ", ".join(f"{p}: {v.status} ({v.seconds:.0f} of {v.slice_s:.0f} s)"
                      for p, v in record.parts.items())
    lines += ["", f"GPU tests: {tests}; parts: {parts}"]
    return "\n".join(lines) + "\n"


def profile_table(p: Profile) -> list[str]:
    """The profile's rows: each category's milliseconds a step, share of the window, kernels
    (operators) a step and its longest."""
    lines = [f"| profile: {p.job}, {p.steps} steps, {p.source} | ms a step | share | "
             f"{'kernels' if p.device == 'cuda' else 'operators'} a step | longest |",
             "|---|---|---|---|---|"]
    for r in p.rows:
        lines.append(f"| {r.category} | {_num(r.ms_per_step, 3)} | {100 * r.share:.1f} % | "
                     f"{_num(r.count_per_step, 1)} | {'; '.join(r.top) or '-'} |")
    lines.append(f"| the window | {_num(p.window_ms_per_step, 3)} | 100 % | - | "
                 f"{p.note or '-'} |")
    return lines


def markdown(record: Record) -> str:
    what = "toy run on a CPU (checks the check; no GPU numbers)" if record.toy else record.gpu
    head = [f"# GPU check {record.name}", "",
            f"{what}; torch {record.torch}, CUDA {record.cuda or '-'}, cuDNN "
            f"{record.cudnn or '-'}, Python {record.python}; commit {record.commit}"
            f"{' (with uncommitted changes)' if record.dirty else ''}; {record.date} "
            f"(started {record.started}); host {record.host}, CPU {record.cpu}; "
            f"{record.wall_s:.0f} s of a {record.budget_s:.0f} s budget, each candidate timed "
            f"for {record.timing_s:g} s; record {record.status}.", "", ""]
    failed = [t for t in record.tests if t.outcome in ("failed", "error", "overran")]
    tail = [""] + [f"- test {t.name}: {t.outcome}: {t.message[:300]}" for t in failed]
    return "\n".join(head) + table(record) + "\n".join(tail) + "\n"
