"""Bad configs by the thousand: random mutations of config.yaml (wrong types, out-of-range and
non-finite numbers, missing and unknown keys, impossible combinations) either pass the checks
the Snakefile runs before any job, or stop there with one message naming a key they touched;
never a traceback. A few of those that pass are dry-run through Snakemake."""

import copy
import random
import subprocess
import sys
from pathlib import Path

import yaml
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from snakemake.exceptions import WorkflowError
from snakemake.utils import validate

from repdist.pipeline.config_checks import check_config
from repdist.pipeline.config_errors import ConfigError
from repdist.pipeline.config_types import whole_numbers_as_int
from repdist.pipeline.overlays import adapt_to_overlays

from conftest import SNAKEMAKE

ROOT = Path(__file__).resolve().parents[1]
SCHEMA = ROOT / "workflow" / "schemas" / "config.schema.yaml"
BASE = yaml.safe_load((ROOT / "config.yaml").read_text())
VALUES = [None, True, False, -1, 0, 1, 2, 3.0, 10**9, -0.5, 0.5, 1e-300, float("nan"),
          float("inf"), "", "x", "auto", "cpu", "max", [], [0], [-1], [1, 2, 2], {}, {"a": 1}]
PASSED: list[dict] = []


def key_paths(node, prefix=()):
    found = [prefix] if prefix else []
    children = node.items() if isinstance(node, dict) else enumerate(node) \
        if isinstance(node, list) else []
    for key, value in children:
        found += key_paths(value, (*prefix, key))
    return found


def mutate(cfg, rng: random.Random) -> set[str]:
    """One random change; returns the key names it touched (for the message check)."""
    path = rng.choice(key_paths(cfg))
    parent = cfg
    for key in path[:-1]:
        parent = parent[key]
    op = rng.random()
    if op < 0.15 and isinstance(parent, dict):
        del parent[path[-1]]
    elif op < 0.25 and isinstance(parent, dict):
        name = f"unknown_{rng.randint(0, 9)}"
        parent[name] = 1
        return {name}
    elif op < 0.3 and isinstance(parent, list):
        parent.append(copy.deepcopy(rng.choice(VALUES)))
    else:
        parent[path[-1]] = copy.deepcopy(rng.choice(VALUES))
    return {k for k in path if isinstance(k, str)}


def the_snakefiles_checks(cfg) -> None:
    """What the Snakefile runs on a config before building the DAG, in its order."""
    validate(cfg, str(SCHEMA))
    whole_numbers_as_int(cfg, SCHEMA)
    adapt_to_overlays(cfg)
    check_config(cfg)


@pytest.mark.slow  # ~45 s: `make test-slow` (CI) runs it
@settings(max_examples=1000, derandomize=True, deadline=None, database=None,
          suppress_health_check=list(HealthCheck))
@given(st.integers(min_value=0, max_value=2**32 - 1), st.integers(min_value=1, max_value=3))
def test_a_mutated_config_passes_or_stops_naming_a_key_it_touched(seed, changes):
    rng = random.Random(seed)  # (hypothesis' own randoms draw subnormal floats, flushed here)
    cfg = copy.deepcopy(BASE)
    touched = set().union(*(mutate(cfg, rng) for _ in range(changes)))
    try:
        the_snakefiles_checks(cfg)
    except (WorkflowError, ConfigError) as err:
        assert any(key in str(err) for key in touched), (touched, str(err)[:500])
    else:
        PASSED.append(cfg)


@pytest.mark.slow  # ~20 s of Snakemake dry-runs
def test_mutated_configs_that_pass_build_their_dag(tmp_path):
    """A sample of the configs that passed: Snakemake builds the whole DAG (dry run)."""
    if not PASSED:
        test_a_mutated_config_passes_or_stops_naming_a_key_it_touched()
    sample = random.Random(0).sample(PASSED, min(3, len(PASSED)))
    assert sample, "no mutated config passed: the sample would test nothing"
    for i, cfg in enumerate(sample):
        path = tmp_path / f"config{i}.yaml"
        path.write_text(yaml.safe_dump(cfg))
        res = subprocess.run([*SNAKEMAKE, "-n", "--cores",
                              "1", "-s", str(ROOT / "Snakefile"), "--directory", str(tmp_path),
                              "--configfile", str(path)], capture_output=True, text=True,
                             timeout=300)
        out = res.stdout + res.stderr
        assert res.returncode == 0 and "Traceback" not in out, out[-3000:]


def test_a_seed_count_of_a_billion_stops_at_the_checks():
    """Found by the dry-run sample: roeder.words.n_seeds = 10**9 passed the checks, and
    Snakemake then filled 24 GB of memory listing the seeds. Every n_seeds is bounded."""
    paths = [p for p in key_paths(BASE) if p[-1] == "n_seeds"]
    assert len(paths) >= 6
    for path in paths:
        cfg = copy.deepcopy(BASE)
        parent = cfg
        for key in path[:-1]:
            parent = parent[key]
        parent[path[-1]] = 10**9
        with pytest.raises((WorkflowError, ConfigError), match="1000000000"):
            the_snakefiles_checks(cfg)
