"""The layout as docs/architecture.md draws it: every module in its layer, imports only
downward, no import cycle, no path insertion, no function longer than a screen anywhere in the
tree (the package, the developer's packages, benchmarks, workflow scripts), no module, function
or class docstring over 120 words in src/, and the DAG of the three configs as recorded."""

import ast
import difflib
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "repdist"
# Higher layers may import lower ones; packages of one layer do not import each other, except
# the command line, which sits on the pipeline's helpers, and the measures, which take tensors
# through io.host.to_host (the one place values leave a device).
LAYERS = {
    "cli": 4,
    "pipeline": 3,
    "experiments": 2, "figures": 2, "extract": 2,
    "training": 1, "models": 1, "data": 1,
    "measures": 0, "io": 0,
}
ALLOWED_SIDEWAYS = {("cli", "pipeline"), ("measures", "io")}
MAX_LINES = 60
MAX_PARAMETERS = 7


# The packages of src/ beside repdist, each above the ones it imports: the developer's shared
# tools, then the GPU check and the checks against the original code (which do not import each
# other). Scripts (benchmarks/, workflow/scripts/) sit on top: nothing imports them.
TOP_LEVELS = {"repdist": 0, "repdist_dev": 1, "repdist_gpucheck": 2, "repdist_retrace": 2}
# Where code may be put on sys.path: only to load code from a folder a person names (a user's
# model file for `repdist extract`, the original code's checkout given on the command line).
PATH_INSERTIONS = {"src/repdist/cli/extract.py", "src/repdist_retrace/original.py",
                   "src/repdist_retrace/logit_distance.py", "src/repdist_retrace/prh.py"}


def modules():
    return sorted(p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts)


def tree() -> list[Path]:
    """Every Python file of the project's own code: src/'s packages, benchmarks, workflow
    scripts (the tests are checked for path insertion alone)."""
    found = [*ROOT.glob("src/**/*.py"), *ROOT.glob("benchmarks/**/*.py"),
             *ROOT.glob("workflow/scripts/*.py")]
    return sorted(p for p in found if "__pycache__" not in p.parts)


def package_of(path: Path) -> str | None:
    parts = path.relative_to(PACKAGE).parts
    return parts[0] if len(parts) > 1 else None


def imported_packages(path: Path) -> set[str]:
    """The repdist sub-packages a module imports (relative imports resolved)."""
    return imports_of(path.read_text(), path.relative_to(PACKAGE.parent).with_suffix("").parts)


def imports_of(text: str, here: tuple[str, ...]) -> set[str]:
    """The repdist sub-packages that source `text` of module `here` (its dotted parts) imports."""
    found = set()
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = list(here[: len(here) - node.level])
                target = base + (node.module.split(".") if node.module else [])
                if node.module is None:  # from . import a, b: the names are modules
                    for alias in node.names:
                        found.add(tuple(target + [alias.name]))
                    continue
            else:
                target = (node.module or "").split(".")
            found.add(tuple(target))
        elif isinstance(node, ast.Import):
            found.update(tuple(a.name.split(".")) for a in node.names)
    return {t[1] for t in found if len(t) > 1 and t[0] == "repdist" and t[1] in LAYERS}


def test_the_package_root_holds_only_its_entry_points():
    loose = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert loose == ["__init__.py", "__main__.py"]
    assert len((PACKAGE / "__main__.py").read_text().splitlines()) <= 10
    assert set(p.name for p in PACKAGE.iterdir() if p.is_dir() and p.name != "__pycache__") \
        == set(LAYERS)


# One study, one name: its package experiments/<study>/, and the files named <study> or
# <study>_<what> in rules/, rules/helpers/, workflow/scripts/, figures/, tests/ and docs/. A file
# that serves several studies, or none, is listed here with the reason.
EXPERIMENTS = PACKAGE / "experiments"
STUDIES = sorted(p.name for p in EXPERIMENTS.iterdir() if (p / "__init__.py").is_file())
SHARED_EXPERIMENTS = {"__init__.py", "outputs.py", "pairs.py"}  # seed files, pairs tables
STUDY_FILES = ("rules/*.smk", "rules/helpers/*.smk", "workflow/scripts/*.py",
               "src/repdist/figures/*.py", "docs/*.md")
SHARED = {
    "rules/common.smk": "helpers every rule file uses",
    "workflow/scripts/seed_pairs.py": "the synthetic and lm branches' pairs of seeds",
    "workflow/scripts/bound_figure.py": "the bound drawn for constructed and synthetic models",
    "src/repdist/figures/__init__.py": "the package",
    "src/repdist/figures/style.py": "every figure's conventions",
    "src/repdist/figures/bound.py": "the bound of the constructed, synthetic and models figures",
    "src/repdist/figures/dynamics.py": "training curves of the synthetic study and of Roeder's",
    "docs/architecture.md": "the whole package",
    "docs/faults.md": "faults of any run",
    "docs/gpu.md": "GPUs for every study",
    "docs/guide.md": "the user's guide to every output",
    "docs/measures.md": "the measures every study uses",
    "docs/results.md": "every study's results",
    "docs/speed.md": "speed of every study",
}


def misnamed(paths: list[str], studies: list[str]) -> list[str]:
    """The paths (relative to the checkout) named for no study and not in SHARED."""
    return [p for p in paths if p not in SHARED and not any(
        Path(p).stem == s or Path(p).stem.startswith(f"{s}_") for s in studies)]


def test_each_study_has_one_name_in_every_folder():
    assert {"synthetic", "cifar", "roeder", "lm", "prh", "logit_distance"} <= set(STUDIES)
    loose = sorted(p.name for p in EXPERIMENTS.iterdir() if p.name != "__pycache__"
                   and p.name not in STUDIES and p.name not in SHARED_EXPERIMENTS)
    assert not loose, f"experiments/ holds study packages and {sorted(SHARED_EXPERIMENTS)}: {loose}"
    for study in STUDIES:  # a package's docstring, nothing imported
        body = ast.parse((EXPERIMENTS / study / "__init__.py").read_text()).body
        assert len(body) == 1 and ast.get_docstring(ast.Module(body, [])), study
    paths = sorted(str(p.relative_to(ROOT)) for g in STUDY_FILES for p in ROOT.glob(g))
    assert not misnamed(paths, STUDIES)
    assert not [p for p in SHARED if not (ROOT / p).is_file()]  # no stale entry
    untested = [s for s in STUDIES if not list((ROOT / "tests").glob(f"test_{s}*.py"))]
    assert not untested, f"studies without a tests/test_<study>*.py: {untested}"
    assert misnamed(["rules/cifar10.smk", "workflow/scripts/train_mlps.py", "docs/cifar.md",
                     "rules/helpers/cifar_extra.smk", "rules/common.smk"], ["cifar"]) == \
        ["rules/cifar10.smk", "workflow/scripts/train_mlps.py"]


def test_imports_run_only_downward():
    wrong = []
    for path in modules():
        own = package_of(path)
        if own is None:
            continue
        for other in imported_packages(path) - {own}:
            if LAYERS[other] > LAYERS[own] or (
                    LAYERS[other] == LAYERS[own] and (own, other) not in ALLOWED_SIDEWAYS):
                wrong.append(f"{path.relative_to(PACKAGE)} ({own}) imports {other}")
    assert not wrong, "\n".join(wrong)


def test_the_layer_check_sees_every_form_of_import():
    here = ("repdist", "measures", "compare")
    assert imports_of("from ..experiments.models.groups import compare_models\n", here) == \
        {"experiments"}
    assert imports_of("    from .. import cli\n".strip() + "\n", here) == {"cli"}
    assert imports_of("import repdist.training.loop\n", here) == {"training"}
    assert imports_of("from .llv import x\n", here) == {"measures"}


def _functions():
    for path in tree():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                yield path, node


def test_no_function_is_longer_than_a_screen_or_takes_too_many_parameters():
    """No function longer than a screen anywhere in the tree (the package, the developer's
    packages, benchmarks, workflow scripts); none of the package's takes too many parameters
    (the developer's keep the original code's signatures where they transcribe it)."""
    too_long, too_many = [], []
    for path, node in _functions():
        where = f"{path.relative_to(ROOT)}:{node.lineno} {node.name}"
        lines = node.end_lineno - node.lineno + 1
        if lines > MAX_LINES:
            too_long.append(f"{where}: {lines} lines")
        a = node.args
        params = [*a.posonlyargs, *a.args, *a.kwonlyargs]
        count = len(params) + bool(a.vararg) + bool(a.kwarg)
        if params and params[0].arg in ("self", "cls", "ctx"):
            count -= 1
        # an autograd Function's forward takes one tensor per input by contract
        in_package = path.is_relative_to(PACKAGE)
        if in_package and count > MAX_PARAMETERS and not (node.name == "forward"
                                                          and params[0].arg == "ctx"):
            too_many.append(f"{where}: {count} parameters")
    assert not too_long, "\n".join(too_long)
    assert not too_many, "\n".join(too_many)


MAX_DOCSTRING_WORDS = 120
DOCUMENTED_PACKAGES = ("repdist", "repdist_dev", "repdist_gpucheck", "repdist_retrace")


def long_docstrings(text: str, limit: int = MAX_DOCSTRING_WORDS) -> list[tuple[int, str, int]]:
    """(line, name, words) of the module's docstring and of each function or class docstring of
    `text` over `limit` words (words: whitespace-separated tokens of ast.get_docstring; the
    module's name: "module")."""
    found = []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            words = len((ast.get_docstring(node) or "").split())
            if words > limit:
                name = "module" if isinstance(node, ast.Module) else node.name
                found.append((getattr(node, "lineno", 1), name, words))
    return found


def test_no_module_function_or_class_docstring_runs_past_120_words():
    """A module's docstring says what it is for and what to know first, and a function's or
    class's what it does, each in at most 120 words, in src/'s packages: design reasons sit as
    comments beside the code they explain, what a user needs beyond that in docs/, history in
    CHANGELOG.md."""
    long = [f"{path.relative_to(ROOT)}:{line} {name}: {words} words"
            for package in DOCUMENTED_PACKAGES
            for path in sorted((ROOT / "src" / package).rglob("*.py"))
            for line, name, words in long_docstrings(path.read_text())]
    assert not long, "\n".join(long)
    essay = 'class C:\n    def f(self):\n        """' + "word " * 121 + '"""\n'
    assert long_docstrings(essay) == [(2, "f", 121)]
    assert long_docstrings('"""' + "word " * 121 + '"""\n') == [(1, "module", 121)]
    assert long_docstrings('"""' + "word " * 120 + '"""\n') == []


def test_comments_cite_the_paper_or_the_original_code_not_an_absent_spec():
    stale = [f"{p.relative_to(ROOT)}:{i}" for p in [*modules(), *ROOT.glob("rules/*.smk"),
                                                 *ROOT.glob("workflow/scripts/*.py")]
             for i, line in enumerate(p.read_text().splitlines(), 1) if "spec §" in line
             or "spec Part" in line]
    assert not stale, stale




@pytest.mark.parametrize("name", ["config", "synthetic", "quick"])
def test_the_dag_is_the_recorded_one(name):
    """Every job (rule, wildcards, input files, outputs, log, benchmark, resources) of the three
    configs; after an intended change: `python -m repdist_dev.dag_snapshot --write`."""
    from repdist_dev import dag_snapshot

    now = dag_snapshot.snapshot(dag_snapshot.CONFIGS[name])
    recorded = dag_snapshot.read_recorded(name)
    diff = "\n".join(difflib.unified_diff(recorded.splitlines(), now.splitlines(), "recorded",
                                          "now", lineterm="", n=0))
    assert now == recorded, diff[:5000]


def test_a_toy_runs_jobs_ask_for_little_memory_and_the_papers_for_their_estimates():
    """config.quick.yaml caps every job's mem_mb at its max_job_mem_mb (2000: through SLURM its
    jobs share a node instead of queueing behind 16 GB requests); config.yaml leaves each
    rule's paper-scale estimate (the recorded DAGs)."""
    import re

    import yaml

    from repdist_dev import dag_snapshot

    def asked(name: str) -> list[int]:
        return [int(m) for m in re.findall(r"mem_mb=(\d+)", dag_snapshot.read_recorded(name))]

    cap = yaml.safe_load((ROOT / "config.quick.yaml").read_text())["max_job_mem_mb"]
    assert max(asked("quick")) == cap == 2000
    assert max(asked("config")) > cap and min(asked("config")) < cap


def last_statement_is_the_job_log(text: str) -> bool:
    """The module's last statement (its docstring aside) is `with job_log(...)`."""
    body = ast.parse(text).body
    last = body[-1] if body else None
    return isinstance(last, ast.With) and any(
        isinstance(item.context_expr, ast.Call) and ast.unparse(item.context_expr.func) ==
        "job_log" for item in last.items)


def test_every_workflow_script_ends_with_its_job_log():
    """A finished job's process ends as its `with job_log(...)` block closes
    (pipeline.joblog.end_finished_job): nothing may follow that block in a script."""
    scripts = sorted((ROOT / "workflow" / "scripts").glob("*.py"))
    assert len(scripts) > 40
    assert [p.name for p in scripts if not last_statement_is_the_job_log(p.read_text())] == []
    assert not last_statement_is_the_job_log(
        "from repdist.pipeline.joblog import job_log\nwith job_log('x.log'):\n    pass\n"
        "print('after the log')\n")  # the check sees work after the block


def test_every_training_rule_logs_where_repdist_progress_looks():
    """The rules that train (their script trains models) name their log through
    `training_log`, so `repdist progress` (pipeline.training_jobs) follows them."""
    from test_envs import directive, rule_blocks

    from repdist.pipeline.training_jobs import training_log

    trainers = {"synthetic_train.py", "cifar_train.py", "synthetic_dynamics.py",
                "distillation_train.py", "lm_train.py", "roeder_cpc_train.py"}
    found = []
    for name, (_, body) in rule_blocks().items():
        script = directive(body, "script") or ""
        if Path(script).name in trainers:
            found.append(name)
            log = body.split("log:\n", 1)[1].splitlines()[0].strip()
            assert log.startswith("training_log("), f"rule {name} logs to {log}"
    assert {"synthetic_train", "synthetic_train_variants", "bound_beyond_train", "cifar10_train",
            "cifar10_train_seeds", "training_dynamics", "distillation_train",
            "lm_train", "roeder_cpc_train"} <= set(found)
    assert training_log("synthetic_train", "K4_w16_g0_f0") == \
        "logs/synthetic_train/K4_w16_g0_f0.log"
    with pytest.raises(ValueError, match="not a training job"):
        training_log("synthetic_pairs", "K4")


def module_of(path: Path) -> str:
    """The dotted name of a module of src/ (a package by its __init__)."""
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def module_imports(text: str, here: str, known: set[str]) -> set[str]:
    """The modules of `known` that source `text` of module `here` imports, at module level or
    inside a function (an import moved into a function still closes a cycle when it runs):
    `from a.b import c` is a.b.c where that is a module, else a.b."""
    package = here.split(".") if f"{here}.__init__" in known else here.split(".")[:-1]
    found = set()
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.ImportFrom):
            base = (package[: len(package) - node.level + 1] if node.level else [])
            target = ".".join(base + (node.module.split(".") if node.module else []))
            for alias in node.names:
                found.add(f"{target}.{alias.name}" if f"{target}.{alias.name}" in known
                          else target)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
    return {name for name in found if name in known and name != here}


def import_graph() -> dict[str, set[str]]:
    """Every module of src/'s packages (repdist and the developer's) -> what it imports."""
    paths = sorted(p for p in ROOT.glob("src/**/*.py") if "__pycache__" not in p.parts)
    known = {module_of(p) for p in paths}
    known |= {f"{module_of(p)}.__init__" for p in paths if p.name == "__init__.py"}
    return {module_of(p): module_imports(p.read_text(), module_of(p), known) for p in paths}


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for other in sorted(graph.get(node, ())):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            group = []
            while True:
                top = stack.pop()
                group.append(top)
                if top == node:
                    break
            if len(group) > 1:
                cycles.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return cycles


def test_no_import_cycle_between_modules():
    """No two modules import each other, directly or through others, counting the imports
    inside functions (which only hide a cycle until the function runs)."""
    cycles = import_cycles(import_graph())
    assert not cycles, "\n".join(" <-> ".join(c) for c in cycles)


def test_the_cycle_check_finds_a_cycle_hidden_in_a_function():
    known = {"repdist.pipeline.a", "repdist.pipeline.b", "repdist.pipeline.c", "repdist.io",
             "repdist.io.__init__", "repdist.io.files"}
    here = "repdist.pipeline.a"
    assert module_imports("def f():\n    from .b import x\n", here, known) == \
        {"repdist.pipeline.b"}
    assert module_imports("from ..io import files, atomic\n", here, known) == \
        {"repdist.io.files", "repdist.io"}
    assert module_imports("from . import c\nimport repdist.io.files\n", here, known) == \
        {"repdist.pipeline.c", "repdist.io.files"}
    assert module_imports("from .files import x\n", "repdist.io", known) == {"repdist.io.files"}
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert import_cycles(graph) == [["a", "b", "c"]]
    assert import_cycles({"a": {"b"}, "b": set()}) == []


def test_every_runtime_estimate_is_the_one_function():
    """The rules' `resources: runtime` come from pipeline/training_jobs.py::job_minutes: no rule
    file writes its own max(..., int(...)) formula (the DAG snapshot holds every job's value)."""
    from repdist.pipeline.training_jobs import job_minutes

    formulas = [f"{p.relative_to(ROOT)}:{i}" for p in ROOT.glob("rules/**/*.smk")
                for i, line in enumerate(p.read_text().splitlines(), 1)
                if "max(" in line and "int(" in line]
    assert not formulas, formulas
    assert job_minutes(40, (0.5, 0.25), floor=5, margin=10, times=2) == 30
    assert job_minutes(40, (0.01,), floor=5) == 5 and job_minutes(60, times=3) == 180


def test_every_home_in_the_concept_table_exists():
    """docs/architecture.md's "where each concept lives": every module it names is there."""
    import re

    text = (ROOT / "docs" / "architecture.md").read_text().split("## Where each concept lives")[1]
    homes = re.findall(r"`((?:cli|pipeline|experiments|figures|extract|training|models|data|"
                       r"measures|io)/[a-z_]+(?:/[a-z_]+)?\.py)`", text)
    assert len(homes) > 40
    missing = [h for h in homes if not (PACKAGE / h).is_file()]
    assert not missing, missing


def test_the_top_level_packages_import_only_downward_and_nothing_imports_a_script():
    wrong = []
    for path in tree():
        text = path.read_text()
        own = path.relative_to(ROOT).parts
        level = TOP_LEVELS.get(own[1]) if own[0] == "src" else None
        for node in ast.walk(ast.parse(text)):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                     [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level
                     else [])
            for name in names:
                top = name.split(".")[0]
                if top in ("benchmarks", "workflow", "tests", "conftest"):
                    wrong.append(f"{path.relative_to(ROOT)} imports {name}")
                elif level is not None and top in TOP_LEVELS and top != own[1] and \
                        TOP_LEVELS[top] >= level:
                    wrong.append(f"{path.relative_to(ROOT)} ({own[1]}) imports {name}")
    assert not wrong, wrong


def test_nothing_puts_code_on_sys_path_but_to_load_a_named_folder():
    """No module finds another by a path hack: packages are imported by name. The only
    insertions load code from a folder a person names on the command line."""
    found = set()
    for path in [*tree(), *ROOT.glob("tests/**/*.py")]:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Attribute) and node.attr in ("insert", "append") and \
                    isinstance(node.value, ast.Attribute) and node.value.attr == "path" and \
                    isinstance(node.value.value, ast.Name) and node.value.value.id == "sys":
                found.add(str(path.relative_to(ROOT)))
    assert found == PATH_INSERTIONS, sorted(found ^ PATH_INSERTIONS)
