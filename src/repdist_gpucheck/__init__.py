"""`make gpu-check` (`python -m repdist_gpucheck --out DIR`): the GPU decided in one run. Its
parts, each a module: `check` (the parts in their time slices, the record, the exit status),
`candidates` (the speed matrix and its numerical checks, run in worker processes), `measures`
(compare at GPT-2's shapes), `record` (the record's format and table), `pytest_plugin` (the
GPU tests' outcomes as they come). docs/gpu.md says how to run it and read a record."""
