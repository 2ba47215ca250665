"""`make gpu-check OUT=DIR`: the GPU decided in one run.
Its parts run in order: tests, speed, measures, profile, then the table and the record. Each gets
a time slice of the budget and is cut short cleanly when it overruns. `--parts compile` is the
second command: torch.compile's modes, in a record of its own. The exit status is 0 when every
part asked for is ok, 1 when one failed, and 3 when one overran or was skipped. Without a CUDA GPU
it refuses; REPDIST_GPU_TESTS_DEVICE=cpu (or --toy) runs the whole check at toy size on the CPU.
docs/gpu.md says how to read a record."""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from repdist_dev.checkout import ROOT
from repdist_dev.records import RECORDS, commit, slug
from repdist_gpucheck import record as rec
from repdist_gpucheck.candidates import BY_NAME, SPECS, TOY_SLACK, Spec, new_row, part_names
from repdist_gpucheck.measures import SIZES, plan
from repdist_gpucheck.profiling import JOB as PROFILED_JOB

# Shares of the budget less RESERVE_S, in the order the parts run; compile, the second command,
# gets it all. Needs on an H200: tests ~188 s, speed ~255 s at 5 s a candidate, measures ~40 s,
# the profile ~25 s estimated (docs/gpu.md, "The budget").
SHARES = {"tests": 0.42, "speed": 0.40, "measures": 0.10, "profile": 0.08, "compile": 1.0}
RESERVE_S = 15.0  # the last record and the table
# 480 s: the command ends within 9 minutes, install included; unused time goes to the next part
BUDGET_S = {"gpu": 480.0, "toy": 480.0}
# 128 + the signal where SIGTERM or SIGINT ended the check (its processes ended, record kept)
EXIT = {"ok": 0, "failed": 1, "cut": 3}
PROBE = r"""
import json, os, platform, torch
cuda = torch.cuda.is_available()
print(json.dumps({
    "torch": torch.__version__, "cuda": torch.version.cuda or "",
    "cudnn": str(torch.backends.cudnn.version() or "") if cuda else "",
    "available": cuda, "gpu": torch.cuda.get_device_name(0) if cuda else "",
    "graph_option": "cuda_graph" in __import__("repdist.training.loop", fromlist=["x"])
        .RunOptions.__dataclass_fields__}))
"""


def log(message: str) -> None:
    print(f"gpu-check: {message}", flush=True)


def gpu_test_files() -> list[str]:
    """The test modules that hold tests marked `gpu`, found by their text: pytest -m gpu over
    these runs every gpu test of the suite (tests/test_gpu_check.py holds that), and collecting
    the others would import what a GPU machine's Python need not have."""
    return sorted(str(p.relative_to(ROOT)) for p in (ROOT / "tests").glob("test_*.py")
                  if "mark.gpu" in p.read_text())


def cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return f"{line.split(':', 1)[1].strip()} x {os.cpu_count()}"
    except OSError:
        pass
    return f"{platform.processor() or platform.machine()} x {os.cpu_count()}"


def python_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """This environment with the checkout's src/ importable (its packages, installed or not)."""
    path = os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")])
    return {**os.environ, "PYTHONPATH": path.rstrip(os.pathsep), "PYTHONUNBUFFERED": "1",
            **(extra or {})}


def end_tree(proc: subprocess.Popen) -> None:
    """End a process and everything it started (GPU jobs included), gently then not."""
    try:
        import psutil
    except ImportError:  # its own process group, started so by `spawn`
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
            time.sleep(3)
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        return
    try:
        family = [psutil.Process(proc.pid), *psutil.Process(proc.pid).children(True)]
    except psutil.NoSuchProcess:
        family = []
    for p in family:
        with contextlib.suppress(psutil.NoSuchProcess):
            p.terminate()
    for p in psutil.wait_procs(family, timeout=5)[1]:
        with contextlib.suppress(psutil.NoSuchProcess):
            p.kill()
    proc.wait()


class GpuCheck:
    """One run of the check: its record, rewritten as results come, and its clock."""

    def __init__(self, args: argparse.Namespace, probe: dict[str, Any]) -> None:
        self.args, self.out = args, args.out
        self.start = time.monotonic()
        self.deadline = self.start + args.budget
        now = dt.datetime.now(dt.timezone.utc)
        self.log_path = self.out / "gpu-check.log"
        head, dirty = commit()
        self.record = rec.Record(
            schema=rec.SCHEMA, status="partial", toy=args.toy,
            device="cpu" if args.toy else "cuda", gpu=probe["gpu"],
            gpu_slug="cpu-toy" if args.toy else slug(probe["gpu"]), torch=probe["torch"],
            cuda=probe["cuda"], cudnn=probe["cudnn"], python=platform.python_version(),
            commit=head, dirty=dirty, date=now.strftime("%Y-%m-%d"),
            started=now.strftime("%H:%M:%SZ"), host=platform.node(), cpu=cpu_name(),
            budget_s=args.budget, wall_s=0.0, timing_s=args.seconds,
            parts_asked=list(args.parts), parts={}, tests=[], candidates=[], measures=[],
            graph_option=bool(probe["graph_option"]))
        self.leftover = 0.0  # seconds earlier parts left unused
        self.work = Path(tempfile.mkdtemp(prefix="gpu-check-"))  # events, reference states
        self.running: subprocess.Popen | None = None  # the part's process, ended on a signal
        self.current = ""  # the part running

    def save(self) -> None:
        self.record.wall_s = time.monotonic() - self.start
        rec.write(self.record, self.out)

    def spawn(self, cmd: list[str], env: dict[str, str] | None = None) -> subprocess.Popen:
        handle = self.log_path.open("a")
        handle.write(f"\n$ {' '.join(cmd)}\n")
        handle.flush()
        self.running = subprocess.Popen(cmd, cwd=ROOT, env=python_env(env), stdout=handle,
                                        stderr=subprocess.STDOUT, start_new_session=True)
        return self.running

    def slice_for(self, part: str) -> float:
        """The part's share of the budget plus what earlier parts left, never eating into the
        later parts' shares."""
        usable = self.args.budget - RESERVE_S
        asked = sum(SHARES[p] for p in self.args.parts)
        later = sum(SHARES[p] for p in list(SHARES)[list(SHARES).index(part) + 1:]
                    if p in self.args.parts) / asked * usable
        left = self.deadline - RESERVE_S - time.monotonic() - later
        return max(0.0, min(SHARES[part] / asked * usable + self.leftover, left))

    def run_part(self, part: str, body: Callable[[float], tuple[str, str]]) -> None:
        if part not in self.args.parts:
            if part in rec.DEFAULT_PARTS:
                self.record.parts[part] = rec.Part("not run", 0.0, 0.0,
                                                   "not asked for (--parts)")
            return
        self.current = part
        slice_s = self.slice_for(part)
        log(f"part {part}: {slice_s:.0f} s")
        begun = time.monotonic()
        self.record.parts[part] = rec.Part("ok", slice_s, 0.0, "running")
        self.save()
        try:
            status, note = body(begun + slice_s)
        except Exception as err:  # noqa: BLE001 - the record says so, the next part runs
            status, note = "failed", f"{type(err).__name__}: {err}"
        used = time.monotonic() - begun
        self.leftover = max(0.0, slice_s - used)
        self.record.parts[part] = rec.Part(status, slice_s, used, note)
        self.save()
        log(f"part {part}: {status} in {used:.0f} s{f' ({note})' if note else ''}")

    # a. tests: every test marked `gpu`, short ones first, in check mode (REPDIST_GPU_CHECK=1: the
    # quick DAG narrowed to one synthetic and one CIFAR job and their pairs, the authors' to K = 4).
    def tests(self, end: float) -> tuple[str, str]:
        events = self.work / "tests.jsonl"
        targets = [*gpu_test_files(), *(["-k", self.args.tests_k] if self.args.tests_k
                                        else [])]
        env = {"REPDIST_GPU_CHECK": "1", "REPDIST_GPU_CHECK_TESTS": str(events),
               "REPDIST_GPU_TEST_TIMEOUT": str(int(max(30, end - time.monotonic())))}
        if self.args.toy:
            env["REPDIST_GPU_TESTS_DEVICE"] = "cpu"
        cmd = [sys.executable, "-m", "pytest", "-q", "-m", "gpu", "-p",
               "repdist_gpucheck.pytest_plugin", "-p", "no:cacheprovider",
               f"--junitxml={self.out / 'tests-junit.xml'}", *targets]
        proc = self.spawn(cmd, env)
        cut = self.watch(proc, end, lambda: self.read_tests(events))
        results = self.read_tests(events, cut)
        bad = [t for t in results if t.outcome in ("failed", "error")]
        if cut:
            return "overran", "cut at the end of its slice"
        if proc.returncode not in (0, 5) and not bad:
            return "failed", f"pytest exit {proc.returncode} (see gpu-check.log)"
        tally = {o: sum(t.outcome == o for t in results) for o in ("passed", "skipped")}
        note = f"{tally['passed']} passed, {tally['skipped']} skipped, {len(bad)} failed"
        return ("failed" if bad else "ok"), note

    def read_tests(self, events: Path, cut: bool = False) -> list[rec.TestResult]:
        names, started, done = [], {}, {}
        if events.exists():
            for line in events.read_text().splitlines():
                e = json.loads(line)
                if e["event"] == "collected":
                    names = e["names"]
                elif e["event"] == "start":
                    started[e["name"]] = e["time"]
                else:
                    done[e["name"]] = rec.TestResult(e["name"], e["outcome"], e["seconds"],
                                                     e["message"])
        out = []
        for name in names or list(done):
            if name in done:
                out.append(done[name])
            elif name in started and cut:
                out.append(rec.TestResult(name, "overran", time.time() - started[name],
                                          "running when the tests part's time ran out"))
            elif cut:
                out.append(rec.TestResult(name, "skipped", 0.0,
                                          "not reached: the tests part's time ran out"))
        self.record.tests = out
        self.save()
        return out

    def watch(self, proc: subprocess.Popen, end: float, poll: Callable[[], Any],
              limit: Callable[[], float] | None = None) -> bool:
        """Wait for `proc`, calling `poll` now and then; end it (and its children) at `end` or
        when `limit()` passes. True if it was cut."""
        last = 0.0
        while proc.poll() is None:
            now = time.monotonic()
            if now >= end or (limit is not None and now >= limit()):
                end_tree(proc)
                poll()
                return True
            if now - last > 2:
                poll()
                last = now
            time.sleep(0.2)
        poll()
        return False

    # b. speed: the candidates in SPECS' order, each checked against its reference and timed
    # (--seconds), with the paper's minutes. `--parts compile` times torch.compile's modes beside
    # the CIFAR reference, in a record of its own (<gpu>-<date>-compile).
    def speed(self, end: float) -> tuple[str, str]:
        return self.candidates(end, "speed")

    def compile(self, end: float) -> tuple[str, str]:
        return self.candidates(end, "compile")

    def candidates(self, end: float, part: str) -> tuple[str, str]:
        names = [n for n in part_names(part, self.args.only)
                 if n not in {c.name for c in self.record.candidates}]
        done = list(self.record.candidates)  # an earlier part's rows stay in the record
        rows: dict[str, rec.Candidate] = {}
        state = self.work / part
        state.mkdir()
        cut_any = False
        while todo := [n for n in names if n not in rows]:
            if end - time.monotonic() < self.args.seconds + 10:
                for name in todo:
                    rows[name] = new_row(BY_NAME[name], "skipped",
                                         f"not reached: the {part} part's time ran out")
                cut_any = True
                break
            events = state / "events.jsonl"
            events.unlink(missing_ok=True)
            proc = self.spawn([sys.executable, "-m", "repdist_gpucheck.candidates", "--names",
                               ",".join(todo), "--results", str(events), "--state",
                               str(state), "--seconds", str(self.args.seconds),
                               "--device", "cpu" if self.args.toy else "cuda",
                               *(["--toy"] if self.args.toy else [])],
                              {"REPDIST_GPU_CHECK_INJECT": ",".join(self.args.inject)})
            current: dict[str, Any] = {}

            def poll() -> None:
                self.read_candidates(events, rows, current, names, done)

            def limit() -> float:
                if "name" not in current:
                    return float("inf")
                return current["since"] + self.candidate_slice(BY_NAME[current["name"]])

            cut = self.watch(proc, end, poll, limit)
            if "name" in current and current["name"] not in rows:
                name = current["name"]
                spent = time.monotonic() - current["since"]
                why = (f"cut at its slice of {self.candidate_slice(BY_NAME[name]):.0f} s"
                       if cut else f"its process ended (exit {proc.returncode}) after "
                       f"{spent:.0f} s: see gpu-check.log")
                rows[name] = new_row(BY_NAME[name], "overran" if cut else "failed", why)
                rows[name].seconds = spent
                cut_any |= cut
                self.record.candidates = done + [rows[n] for n in names if n in rows]
                self.save()
            elif "name" not in current and not cut:
                raise RuntimeError(f"the speed worker ended (exit {proc.returncode}) before "
                                   "its first candidate: see gpu-check.log")
        self.record.candidates = done + [rows[n] for n in names if n in rows]
        failed = [n for n in names if rows[n].status in ("failed", "invalid")]
        status = "failed" if failed else "overran" if cut_any else "ok"
        return status, f"failed or invalid: {', '.join(failed)}" if failed else ""

    def candidate_slice(self, spec: Spec) -> float:
        """Its timed window plus its checks, start and warm-up (more on a slow toy CPU)."""
        return self.args.seconds + spec.extra_s * (TOY_SLACK if self.args.toy else 1.0)

    def read_candidates(self, events: Path, rows: dict[str, rec.Candidate],
                        current: dict[str, Any], names: list[str],
                        done: list[rec.Candidate]) -> None:
        if not events.exists():
            return
        changed = False
        for line in events.read_text().splitlines():
            e = json.loads(line)
            if e["event"] == "start" and e["name"] not in rows:
                if current.get("name") != e["name"]:
                    current.update(name=e["name"], since=time.monotonic())
            elif e["event"] == "done" and e["candidate"]["name"] not in rows:
                row = rec.build(rec.Candidate, e["candidate"], "candidate")
                rows[row.name] = row
                changed = True
                log(f"{row.name}: {row.status}"
                    + (f", {row.steps_per_s:.1f} steps/s, paper {row.paper_minutes:.2f} min"
                       if row.steps_per_s else f" ({row.note})" if row.note else ""))
        if changed:
            self.record.candidates = done + [rows[n] for n in names if n in rows]
            self.save()

    # c. measures: compare at GPT-2's shapes on the GPU (repdist_gpucheck.measures).
    def measures(self, end: float) -> tuple[str, str]:
        events = self.work / "measures.jsonl"
        proc = self.spawn([sys.executable, "-m", "repdist_gpucheck.measures", "--results",
                           str(events), *(["--toy"] if self.args.toy else [])])
        started: dict[str, float] = {}

        def poll() -> None:
            rows = []
            if events.exists():
                for line in events.read_text().splitlines():
                    e = json.loads(line)
                    if e["event"] == "start":
                        started[e["name"]] = e["time"]
                    else:
                        rows.append(rec.build(rec.MeasureRow, e["row"], "measure"))
            self.record.measures = rows
            self.save()

        cut = self.watch(proc, end, poll)
        done = {r.name for r in self.record.measures}
        sizes = SIZES["toy" if self.args.toy else "gpu"]
        for name in plan(self.args.toy):
            if name in done:
                continue
            n, k, m = sizes[name.split(".")[0]]
            status = "overran" if (cut and name in started) else "skipped" if cut else "failed"
            why = {"overran": "running when the measures part's time ran out",
                   "skipped": "not reached: the measures part's time ran out",
                   "failed": f"the worker ended (exit {proc.returncode}): see gpu-check.log"}
            self.record.measures.append(rec.MeasureRow(
                name=name, n=n, k=k, m=m, device="", max_pivots=0, status=status, seconds=None,
                kl=None, t1=None, d_llv=None, y_pivot=None, proven=None, rel_diff=None,
                against="", passes=None, note=why[status]))
        self.save()
        if cut:
            return "overran", ""
        bad = [r.name for r in self.record.measures if r.passes is False or r.status != "ok"]
        return ("failed", f"{', '.join(bad)}") if bad else ("ok", "")

    # d. profile: where a step of the CIFAR job spends its time (repdist_gpucheck.profiling).
    def profile(self, end: float) -> tuple[str, str]:
        result = self.work / "profile.json"
        proc = self.spawn([sys.executable, "-m", "repdist_gpucheck.profiling", "--result",
                           str(result), "--device", "cpu" if self.args.toy else "cuda",
                           *(["--toy"] if self.args.toy else [])])
        if self.watch(proc, end, lambda: None):
            return "overran", f"cut at the end of its slice (profiling {PROFILED_JOB})"
        if proc.returncode != 0 or not result.exists():
            return "failed", f"its process ended (exit {proc.returncode}): see gpu-check.log"
        self.record.profile = rec.build(rec.Profile, json.loads(result.read_text()), "profile")
        self.save()
        return "ok", self.record.profile.source

    def stopped(self, stop: Interrupted) -> None:
        """A signal ended the check: the running part's processes (and theirs) ended, the part
        recorded as failed and the later ones as skipped, the record kept (partial)."""
        if self.running is not None and self.running.poll() is None:
            end_tree(self.running)
        for part in self.args.parts:
            if part == self.current:
                used = time.monotonic() - self.start
                self.record.parts[part] = rec.Part("failed", self.record.parts[part].slice_s,
                                                   used, f"ended by {stop}")
            elif part not in self.record.parts or self.record.parts[part].note == "running":
                self.record.parts[part] = rec.Part("skipped", 0.0, 0.0, f"not reached: {stop}")
        self.save()
        shutil.rmtree(self.work, ignore_errors=True)
        log(f"ended by {stop}: every part's processes ended; record {self.out} (partial)")

    def exit_status(self) -> int:
        """0: every part asked for ok; 1: one failed; 3: one overran or was skipped."""
        statuses = {self.record.parts[p].status for p in self.args.parts}
        return EXIT["failed"] if "failed" in statuses else (
            EXIT["ok"] if statuses == {"ok"} else EXIT["cut"])

    # e. the short table, printed last, and the record <gpu>-<date>.json + .md in DIR; on a GPU
    # also in benchmarks/records/, to be committed.
    def finish(self) -> None:
        self.record.status = "complete"
        self.save()
        shutil.rmtree(self.work, ignore_errors=True)
        if not self.args.toy and not self.args.no_copy:
            rec.write(self.record, RECORDS)
            log(f"record copied into {RECORDS.relative_to(ROOT)}/ (commit it)")
        print()
        print(rec.table(self.record), end="")
        print(f"gpu-check: record {self.out / (self.record.name + '.json')} "
              f"({self.record.wall_s:.0f} s)", flush=True)


def probe() -> dict[str, Any]:
    out = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, env=python_env(),
                         capture_output=True, text=True, timeout=300)
    if out.returncode != 0:
        raise SystemExit(f"gpu-check: torch did not start:\n{out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "results/gpu-check")
    parser.add_argument("--budget", type=float, default=None,
                        help=f"seconds for the whole check (default {BUDGET_S['gpu']:.0f} on a "
                             f"GPU, {BUDGET_S['toy']:.0f} toy)")
    parser.add_argument("--seconds", type=float, default=None,
                        help="each candidate's timed window (default 5 on a GPU, 0.3 toy)")
    parser.add_argument("--parts", default=",".join(rec.DEFAULT_PARTS),
                        help="comma-separated subset of " + ",".join(rec.PART_NAMES))
    parser.add_argument("--only", default="",
                        help="comma-separated candidates of the speed or compile part (default "
                             "all): " + ", ".join(s.name for s in SPECS))
    parser.add_argument("--tests-k", default="",
                        help="run the GPU tests selected by this -k expression instead")
    parser.add_argument("--toy", action="store_true",
                        help="toy size on the CPU (also REPDIST_GPU_TESTS_DEVICE=cpu)")
    parser.add_argument("--no-copy", action="store_true",
                        help="do not copy the record into benchmarks/records/")
    parser.add_argument("--inject", default="",
                        help="the check's own tests: capture:NAME (its CUDA-graph captures "
                             "fail), wrong:NAME (trained at a 2 %% higher learning rate)")
    args = parser.parse_args(argv)
    args.toy = args.toy or os.environ.get("REPDIST_GPU_TESTS_DEVICE") == "cpu"
    args.budget = args.budget or BUDGET_S["toy" if args.toy else "gpu"]
    args.seconds = args.seconds if args.seconds is not None else (0.3 if args.toy else 5.0)
    args.parts = [p for p in rec.PART_NAMES if p in args.parts.split(",")]
    args.only = [n for n in args.only.split(",") if n]
    args.inject = [n for n in args.inject.split(",") if n]
    unknown = [p for p in args.parts if p not in SHARES] + [n for n in args.only
                                                            if n not in BY_NAME]
    unknown += [f for f in args.inject if f.partition(":")[2] not in BY_NAME
                or f.partition(":")[0] not in ("capture", "wrong")]
    if unknown or not args.parts:
        parser.error(f"unknown parts, candidates or faults: {unknown or args.parts}")
    return args


class Interrupted(BaseException):
    """SIGTERM or SIGINT reached the check (a time limit, a person): end every part's processes,
    keep the record."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def interrupt(signum: int, frame: Any) -> None:
    """The first SIGTERM or SIGINT ends the check; later ones (a time limit signals the whole
    process group, make included, whose end signals again) wait for that to finish."""
    for other in (signal.SIGTERM, signal.SIGINT):
        signal.signal(other, signal.SIG_IGN)
    raise Interrupted(signum)


# The toy check writes a record of the same format; tests/test_gpu_check.py keeps it working.
def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    found = probe()
    if not args.toy and not found["available"]:
        print("make gpu-check: torch sees no CUDA GPU here (REPDIST_GPU_TESTS_DEVICE=cpu runs "
              "the toy check on the CPU)")
        return 1
    args.out.mkdir(parents=True, exist_ok=True)
    check = GpuCheck(args, found)
    log(f"{'toy run on the CPU' if args.toy else found['gpu']}, torch {found['torch']}; "
        f"budget {args.budget:.0f} s; parts {','.join(args.parts)}; writing {args.out}")
    check.save()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, interrupt)
    try:
        for part in rec.PART_NAMES:
            check.run_part(part, getattr(check, part))
    except Interrupted as stop:
        check.stopped(stop)
        return 128 + stop.signum
    check.finish()
    return check.exit_status()


if __name__ == "__main__":
    sys.exit(main())
