"""make test-kernels (repdist_dev/kernels.py): each configuration of the float kernels is probed
before its tests, and one the libraries did not take fails rather than passing untested."""

from __future__ import annotations

from repdist_dev import kernels


def test_the_configurations_cover_openblas_numpy_torch_and_all_at_once():
    names = [c.name for c in kernels.configurations()]
    assert names == ["openblas-haswell", "openblas-zen", "openblas-prescott", "openblas-skylakex",
                     "numpy-baseline", "torch-default", "torch-avx2", "all-baseline"]
    by_name = {c.name: c for c in kernels.configurations()}
    assert by_name["openblas-skylakex"].needs == "avx512f"
    assert by_name["numpy-baseline"].env["NPY_DISABLE_CPU_FEATURES"].split() == [
        "X86_V3", "X86_V4", "AVX512_ICL", "AVX512_SPR"]


def test_a_configuration_the_libraries_did_not_take_is_named():
    """The probe's report against what a configuration asked for: each library that kept its
    own kernels is named."""
    config = {c.name: c for c in kernels.configurations()}["all-baseline"]
    taken = {"openblas": ["Katmai"], "numpy_off": list(config.numpy_off), "torch": "DEFAULT"}
    assert kernels.mismatch(config, taken) == ""
    kept = {"openblas": ["SkylakeX"], "numpy_off": [], "torch": "AVX512"}
    why = kernels.mismatch(config, kept)
    assert "OpenBLAS reports ['SkylakeX']" in why and "numpy still dispatches" in why
    assert "torch's capability is AVX512" in why


def test_the_probe_reads_what_a_fresh_interpreter_runs_on():
    """A real probe: numpy's AVX2 group off and torch at its default kernels, as asked."""
    seen = kernels.probe({"NPY_DISABLE_CPU_FEATURES": "X86_V3 X86_V4 AVX512_ICL AVX512_SPR",
                          "ATEN_CPU_CAPABILITY": "default"})
    assert "X86_V3" in seen["numpy_off"] and seen["torch"] == "DEFAULT"
    assert seen["openblas"]  # numpy's OpenBLAS, whichever core this CPU has
