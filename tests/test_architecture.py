"""The layout as docs/architecture.md draws it: every module in its layer, imports only
downward, no import cycle, no path insertion, no function longer than a screen anywhere in the
tree (the package, the developer's packages, benchmarks, workflow scripts), and the DAG of the
three configs as recorded."""

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
PATH_INSERTIONS = {"src/repdist/cli/extract.py", "src/repdist_retrace/cifar.py",
                   "src/repdist_retrace/prh.py"}


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
    assert imports_of("from ..experiments.models import compare_models\n", here) == \
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


def test_every_training_rule_logs_where_repdist_progress_looks():
    """The rules that train (their script trains models) name their log through
    `training_log`, so `repdist progress` (pipeline.training_jobs) follows them."""
    from test_envs import directive, rule_blocks

    from repdist.pipeline.training_jobs import training_log

    trainers = {"train_mlps.py", "train_resnets.py", "training_dynamics.py", "train_students.py",
                "lm_train.py"}
    found = []
    for name, (_, body) in rule_blocks().items():
        script = directive(body, "script") or ""
        if Path(script).name in trainers:
            found.append(name)
            log = body.split("log:\n", 1)[1].splitlines()[0].strip()
            assert log.startswith("training_log("), f"rule {name} logs to {log}"
    assert {"synthetic_train", "synthetic_train_variants", "bound_beyond_train", "cifar10_train",
            "cifar10_train_seeds", "training_dynamics", "distillation_train",
            "lm_train"} <= set(found)
    assert training_log("synthetic_train", "K4_w16_g0_f0") == \
        "logs/synthetic_train/K4_w16_g0_f0.log"
    with pytest.raises(ValueError, match="not a training job"):
        training_log("synthetic_pairs", "K4")


def module_name(path: Path) -> str:
    """The dotted name of a module of src/."""
    parts = path.relative_to(ROOT / "src").with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph(paths: list[Path]) -> dict[str, set[str]]:
    """Module -> the modules of `paths` it imports, at the top or inside a function (an import
    in a function is still an edge: hiding one there does not remove a cycle)."""
    names = {module_name(p): p for p in paths}
    graph: dict[str, set[str]] = {}
    for name, path in names.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        edges = set()
        for node in ast.walk(ast.parse(path.read_text())):
            targets = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join(up + ([node.module] if node.module else []))
                targets = [f"{base}.{a.name}" for a in node.names] + [base]
            for target in targets:
                while target and target not in names:
                    target = target.rpartition(".")[0]
                if target and target != name:
                    edges.add(target)
        graph[name] = edges
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in graph.get(node, ()):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            part = []
            while True:
                top = stack.pop()
                part.append(top)
                if top == node:
                    break
            if len(part) > 1:
                found.append(sorted(part))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_the_cycle_check_finds_a_cycle_hidden_in_a_function(tmp_path):
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


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
