"""requirements.lock against what it must agree with (static, no network): it covers every
dependency of pyproject.toml (main and the extras workflow and test) at a version inside its range,
every entry is pinned with `==` and hashed, torch is left to the Makefile's TORCH_VERSION (and its
CUDA runtime out), the per-rule conda envs pin the same versions as the lock, and, when the tests
run in the project's own .venv, the installed distributions are exactly the lock's."""

from __future__ import annotations

import re
import sys
import tomllib
from importlib import metadata
from pathlib import Path

import pytest
import yaml
from packaging.markers import default_environment
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[1]
LOCK = ROOT / "requirements.lock"
EXTRAS = ("workflow", "test")
# conda-forge name -> PyPI name, where they differ
PYPI_NAME = {"pytorch": "torch", "matplotlib-base": "matplotlib"}
CUDA_ONLY = re.compile(r"^(nvidia-.+|cuda-.+|triton)$")
ENTRY = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s;\\]+)")


def lock_entries(text: str) -> tuple[dict[str, tuple[str, list[str]]], list[str]]:
    """canonical name -> (pinned version, hashes) for each requirement of a lock file's text, and
    the requirement lines that are not `name==version` (ranges, URLs, -e, options)."""
    entries: dict[str, tuple[str, list[str]]] = {}
    not_pinned: list[str] = []
    logical = re.sub(r"\\\n", " ", text)  # join continuation lines
    for line in logical.splitlines():
        line = line.split(" #")[0].strip()
        if not line or line.startswith("#"):
            continue
        m = ENTRY.match(line)
        if not m:
            not_pinned.append(line[:80])
            continue
        name = canonicalize_name(m.group(1))
        assert name not in entries, f"requirements.lock lists {name} twice"
        entries[name] = (m.group(2), re.findall(r"--hash=sha256:([0-9a-f]{64})", line))
    return entries, not_pinned


def pyproject_requirements() -> list[Requirement]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    reqs = [*project["dependencies"]]
    for extra in EXTRAS:
        reqs += project["optional-dependencies"][extra]
    return [Requirement(r) for r in reqs]


def makefile_torch_version() -> str:
    text = (ROOT / "Makefile").read_text()
    version = re.search(r"^TORCH_VERSION \?= (\S+)$", text, flags=re.M)
    assert version, "Makefile: no `TORCH_VERSION ?= X.Y.Z` line"
    assert re.search(r"^TORCH \?= torch==\$\(TORCH_VERSION\)$", text, flags=re.M), (
        "Makefile: TORCH must default to torch==$(TORCH_VERSION)")
    return version.group(1)


def conda_pins(env_file: Path) -> dict[str, str]:
    """PyPI name (or `python`) -> version pinned by a conda env file."""
    pins = {}
    for dep in yaml.safe_load(env_file.read_text())["dependencies"]:
        name, version = dep.split("=", 1)
        pins[canonicalize_name(PYPI_NAME.get(name, name))] = version
    return pins


LOCKED, NOT_PINNED = lock_entries(LOCK.read_text())
ENV_FILES = sorted((ROOT / "envs").glob("*.yaml"))


def test_lock_covers_every_dependency_of_pyproject_at_a_version_in_its_range():
    reqs = pyproject_requirements()
    assert len(reqs) >= 13
    for req in reqs:
        name = canonicalize_name(req.name)
        if name == "torch":  # covered by the Makefile's pin instead
            version = makefile_torch_version()
            assert req.specifier.contains(version), f"TORCH_VERSION {version} outside {req}"
            continue
        assert name in LOCKED, f"requirements.lock lacks {req.name} (pyproject.toml: {req})"
        assert req.specifier.contains(LOCKED[name][0]), (
            f"requirements.lock pins {name}=={LOCKED[name][0]}, outside pyproject.toml's {req}")


def test_every_lock_entry_is_pinned_and_hashed():
    assert not NOT_PINNED, f"requirements.lock: not exact `name==version` pins: {NOT_PINNED}"
    assert len(LOCKED) >= 50
    for name, (version, hashes) in LOCKED.items():
        Version(version)  # an exact version, not a range or a URL
        assert hashes, f"requirements.lock: {name}=={version} has no --hash"


def test_lock_leaves_torch_and_its_cuda_runtime_to_the_makefile():
    for name in LOCKED:
        assert name != "torch" and not CUDA_ONLY.match(name), (
            f"requirements.lock pins {name}: torch comes from $(TORCH), with the runtime of its build")
    assert "# constraints" in LOCK.read_text() and f"torch=={makefile_torch_version()}" in (
        LOCK.read_text().split("# left out")[0]), "requirements.lock not resolved for TORCH_VERSION"


def test_lock_holds_the_build_backend_for_the_editable_install():
    """make venv installs repdist with --no-build-isolation: setuptools must come from the lock."""
    build = tomllib.loads((ROOT / "pyproject.toml").read_text())["build-system"]
    for req in map(Requirement, build["requires"]):
        if canonicalize_name(req.name) == "wheel":
            continue  # setuptools >= 70.1 builds wheels itself
        assert canonicalize_name(req.name) in LOCKED, f"requirements.lock lacks {req}"
        assert req.specifier.contains(LOCKED[canonicalize_name(req.name)][0]), req


def test_lock_pins_what_the_installed_torch_requires():
    """torch's own dependencies (sympy, networkx, jinja2, ...) are pinned by the lock, not left
    to whatever pip picks when it installs torch."""
    try:
        requires = metadata.requires("torch") or []
    except metadata.PackageNotFoundError:
        pytest.skip("torch is not installed here")
    env = default_environment() | {"extra": ""}
    checked = 0
    for req in map(Requirement, requires):
        name = canonicalize_name(req.name)
        if (req.marker and not req.marker.evaluate(env)) or CUDA_ONLY.match(name):
            continue
        assert name in LOCKED, f"requirements.lock lacks torch's dependency {req}"
        assert req.specifier.contains(LOCKED[name][0], prereleases=True), (
            f"requirements.lock pins {name}=={LOCKED[name][0]}, torch requires {req}")
        checked += 1
    assert checked >= 5


@pytest.mark.parametrize("env_file", ENV_FILES, ids=lambda p: p.name)
def test_conda_env_pins_the_lock_versions(env_file):
    pins = conda_pins(env_file)
    python = pins.pop("python")
    header = re.search(r"--python-version (\d+\.\d+)", LOCK.read_text())
    assert header and python.startswith(header.group(1) + "."), (
        f"{env_file.name}: python={python}, the lock is resolved for Python {header.group(1)}")
    torch = makefile_torch_version()
    for name, version in pins.items():
        locked = torch if name == "torch" else LOCKED.get(name, (None,))[0]
        assert locked is not None, f"{env_file.name} pins {name}, which the venv does not install"
        assert version == locked, (
            f"{env_file.name} pins {name}={version}, the venv installs {name}=={locked}")


def in_project_venv() -> bool:
    return Path(sys.prefix).resolve() == (ROOT / ".venv").resolve()


@pytest.mark.skipif(not in_project_venv(), reason="not running in the project's .venv")
def test_installed_distributions_are_exactly_the_lock():
    """What `make venv` made: every lock entry at its version, torch at TORCH_VERSION, and
    nothing else but repdist, pip and the runtime of the torch build."""
    installed = {canonicalize_name(d.metadata["Name"]): d.version for d in metadata.distributions()}
    wrong = {n: (v, installed.get(n)) for n, (v, _) in LOCKED.items() if installed.get(n) != v}
    assert not wrong, f"installed versions differ from requirements.lock (want, have): {wrong}"
    assert Version(installed["torch"]).public == makefile_torch_version(), (
        f"torch {installed['torch']} installed, the Makefile pins {makefile_torch_version()}")
    extra = {n for n in installed
             if n not in LOCKED and n not in {"torch", "repdist", "pip"} and not CUDA_ONLY.match(n)}
    assert not extra, f"installed but not in requirements.lock: {sorted(extra)}"
