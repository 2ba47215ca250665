"""Static checks of the per-rule conda environments (conda channels are unreachable here, so the
environments cannot be built in CI): every env file parses and pins its packages, every rule's
`conda:` path exists, and each env provides exactly the third-party packages that its rules'
scripts import, directly or through the repdist modules they use."""

from __future__ import annotations

import ast
import functools
import re
import sys
from pathlib import Path

import pytest
import yaml

from repdist_dev.rule_files import rule_blocks

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"
# import name -> conda-forge package name, where they differ
CONDA_NAME = {"torch": "pytorch", "yaml": "pyyaml", "sklearn": "scikit-learn",
              "matplotlib": "matplotlib-base", "PIL": "pillow"}
# provided by Snakemake itself (the `snakemake` object of script rules), not by the env
PROVIDED = {"snakemake", "repdist"}
PIN = re.compile(r"^[A-Za-z0-9_.-]+=\d+(\.\d+)+$")


def directive(body: str, name: str) -> str | None:
    m = re.search(rf"^    {name}:\n\s+\"([^\"]+)\"", body, flags=re.M)
    return m.group(1) if m else None


def env_packages(env_file: Path) -> set[str]:
    spec = yaml.safe_load(env_file.read_text())
    return {dep.split("=")[0] for dep in spec["dependencies"] if isinstance(dep, str)}


def module_file(module: str) -> Path | None:
    base = SRC.joinpath(*module.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.exists():
            return candidate
    return None


def resolve(node: ast.ImportFrom, current: str, is_package: bool) -> str:
    if not node.level:
        return node.module or ""
    parts = current.split(".")
    base = parts if is_package else parts[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def optional_imports(tree: ast.AST) -> set[ast.AST]:
    """Imports inside `try:` blocks that catch ImportError (or any Exception): a fallback exists,
    so the module is an option, not a requirement (e.g. torchvision's downloader)."""
    catching = {"ImportError", "ModuleNotFoundError", "Exception"}
    optional: set[ast.AST] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Try) and any(
            isinstance(h.type, ast.Name) and h.type.id in catching for h in node.handlers
        ):
            for stmt in node.body:
                optional.update(n for n in ast.walk(stmt) if isinstance(n, (ast.Import, ast.ImportFrom)))
    return optional


@functools.cache
def module_imports(path: Path, name: str, is_package: bool) -> tuple[frozenset[str], tuple]:
    """What one file imports (parsed once for every script that reaches it): its top-level
    third-party modules, and the repdist modules it names as (file, module, is_package)."""
    tree = ast.parse(path.read_text())
    optional = optional_imports(tree)
    found: set[str] = set()
    repdist: list[tuple[Path, str, bool]] = []
    for node in ast.walk(tree):
        if node in optional:
            continue
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            target = resolve(node, name, is_package)
            names = [target] + [f"{target}.{alias.name}" for alias in node.names]
        for full in names:
            top = full.split(".")[0]
            if top == "repdist":
                parts = full.split(".")
                for i in range(1, len(parts) + 1):
                    mod = ".".join(parts[:i])
                    file = module_file(mod)
                    if file:
                        repdist.append((file, mod, file.name == "__init__.py"))
            elif top and top not in sys.stdlib_module_names and top not in PROVIDED:
                found.add(top)
    return frozenset(found), tuple(repdist)


def third_party_imports(script: Path) -> set[str]:
    """Top-level third-party modules imported by `script` and, transitively, by the repdist
    modules (and their parent packages) it imports, including function-level imports."""
    found: set[str] = set()
    seen: set[str] = set()
    todo: list[tuple[Path, str, bool]] = [(script, "__script__", False)]
    while todo:
        path, name, is_package = todo.pop()
        modules, repdist = module_imports(path, name, is_package)
        found |= modules
        for file, mod, package in repdist:
            if mod not in seen:
                seen.add(mod)
                todo.append((file, mod, package))
    return found


RULES = rule_blocks()
SCRIPT_RULES = {name: body for name, body in RULES.items() if directive(body[1], "script")}


def test_every_env_file_parses_and_pins_its_packages():
    files = sorted((ROOT / "envs").glob("*.yaml"))
    assert len(files) >= 3
    for env_file in files:
        spec = yaml.safe_load(env_file.read_text())
        assert spec["channels"][0] == "conda-forge", env_file
        assert "nodefaults" in spec["channels"], env_file
        deps = spec["dependencies"]
        assert any(d.startswith("python=") for d in deps), env_file
        for dep in deps:
            assert isinstance(dep, str) and PIN.match(dep), f"{env_file.name}: {dep!r} is not pinned"


def test_every_rule_that_runs_code_has_an_existing_conda_env():
    assert len(SCRIPT_RULES) >= 15
    for name, (path, body) in SCRIPT_RULES.items():
        env = directive(body, "conda")
        assert env, f"rule {name} ({path.name}) has no conda: directive"
        assert (path.parent / env).resolve().is_file(), f"rule {name}: {env} does not exist"
        script = directive(body, "script")
        assert (path.parent / script).resolve().is_file(), f"rule {name}: {script} missing"


@pytest.mark.parametrize("env_file", sorted((ROOT / "envs").glob("*.yaml")), ids=lambda p: p.name)
def test_env_provides_exactly_what_its_scripts_import(env_file):
    needed: dict[str, set[str]] = {}
    for name, (path, body) in SCRIPT_RULES.items():
        if (path.parent / directive(body, "conda")).resolve() == env_file.resolve():
            script = (path.parent / directive(body, "script")).resolve()
            for module in third_party_imports(script):
                needed.setdefault(CONDA_NAME.get(module, module), set()).add(script.name)
    assert needed, f"{env_file.name} is used by no rule"
    provided = env_packages(env_file) - {"python"}
    missing = {pkg: sorted(scripts) for pkg, scripts in needed.items() if pkg not in provided}
    assert not missing, f"{env_file.name} lacks packages its scripts import: {missing}"
    unused = provided - set(needed)
    assert not unused, f"{env_file.name} lists packages no script of its rules imports: {unused}"


def test_import_scan_follows_repdist_modules_and_function_level_imports():
    """The scanner must see through `from repdist.x import y` to what x imports."""
    pairs_script = ROOT / "workflow/scripts/seed_pairs.py"
    found = third_party_imports(pairs_script)
    assert {"numpy", "pandas", "pyarrow"} <= found
    assert "scipy" in found  # mutual k-NN (repdist.measures.extra) uses scipy's cKDTree


def test_rules_defined_in_a_loop_are_read_one_a_value(tmp_path):
    """A loop over a literal tuple of `rule:` blocks named by an f-string: one rule a value,
    with the loop's directives (repdist_dev.rule_files)."""
    (tmp_path / "rules").mkdir()
    (tmp_path / "Snakefile").write_text('rule all:\n    input:\n        "a.txt",\n')
    (tmp_path / "rules" / "toy.smk").write_text(
        'for data in ("a", "b"):\n\n    rule:\n        name:\n            f"toy_{data}_train"\n'
        '        output:\n            f"{data}.txt",\n        conda:\n            "env.yaml"\n'
        '        script:\n            "train.py"\n\n    rule:\n        name:\n'
        '            f"toy_{data}_table"\n        input:\n            f"{data}.txt",\n\n\n'
        'rule toy_all:\n    input:\n        "a.txt",\n')
    blocks = rule_blocks(tmp_path)
    assert set(blocks) == {"all", "toy_a_train", "toy_b_train", "toy_a_table", "toy_b_table",
                           "toy_all"}
    for name in ("toy_a_train", "toy_b_train"):
        assert directive(blocks[name][1], "conda") == "env.yaml"
        assert directive(blocks[name][1], "script") == "train.py"
    assert directive(blocks["toy_a_table"][1], "script") is None
    assert 'f"{data}.txt"' in blocks["toy_b_table"][1]


def test_the_followups_rules_are_read_from_their_loop():
    """rules/logit_distance.smk defines a rule of each kind for each data set in one loop."""
    kinds = ("teachers", "students", "table", "figures")
    names = {f"logit_distance_{data}_{kind}" for data in ("spirals", "sub", "cifar100")
             for kind in kinds}
    assert names <= set(SCRIPT_RULES)


@pytest.mark.parametrize("env_file", sorted((ROOT / "envs").glob("*.yaml")), ids=lambda p: p.name)
def test_env_header_names_exactly_the_rules_that_use_it(env_file):
    """Each env file's header comment lists its rules: kept true by this test."""
    header = " ".join(line for line in env_file.read_text().splitlines() if line.startswith("#"))
    named = set(re.findall(r"\b([a-z0-9]+(?:_[a-z0-9]+)+)\b", header)) & set(SCRIPT_RULES)
    using = {name for name, (path, body) in SCRIPT_RULES.items()
             if (path.parent / directive(body, "conda")).resolve() == env_file.resolve()}
    assert named == using, (f"{env_file.name}: header lists {sorted(named - using)} that do not use "
                            f"it and misses {sorted(using - named)}")
