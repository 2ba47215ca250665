"""The layout as docs/architecture.md draws it: every module in its layer, imports only
downward, no function longer than a screen, and the DAG of the three configs as recorded."""

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


def modules():
    return sorted(p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts)


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
    for path in modules():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                yield path, node


def test_no_function_is_longer_than_a_screen_or_takes_too_many_parameters():
    too_long, too_many = [], []
    for path, node in _functions():
        where = f"{path.relative_to(PACKAGE)}:{node.lineno} {node.name}"
        lines = node.end_lineno - node.lineno + 1
        if lines > MAX_LINES:
            too_long.append(f"{where}: {lines} lines")
        a = node.args
        params = [*a.posonlyargs, *a.args, *a.kwonlyargs]
        count = len(params) + bool(a.vararg) + bool(a.kwarg)
        if params and params[0].arg in ("self", "cls", "ctx"):
            count -= 1
        # an autograd Function's forward takes one tensor per input by contract
        if count > MAX_PARAMETERS and not (node.name == "forward" and params[0].arg == "ctx"):
            too_many.append(f"{where}: {count} parameters")
    assert not too_long, "\n".join(too_long)
    assert not too_many, "\n".join(too_many)


def test_comments_cite_the_paper_or_the_original_code_not_an_absent_spec():
    stale = [f"{p.relative_to(ROOT)}:{i}" for p in [*modules(), *ROOT.glob("rules/*.smk"),
                                                 *ROOT.glob("workflow/scripts/*.py")]
             for i, line in enumerate(p.read_text().splitlines(), 1) if "spec §" in line
             or "spec Part" in line]
    assert not stale, stale


sys.path.insert(0, str(ROOT / "tools"))


@pytest.mark.parametrize("name", ["config", "synthetic", "quick"])
def test_the_dag_is_the_recorded_one(name):
    """Every job (rule, wildcards, input files, outputs, log, benchmark, resources) of the three
    configs; after an intended change: `python tools/dag_snapshot.py --write`."""
    import dag_snapshot

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
                "lm_train.py", "roeder_cpc_train.py"}
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
