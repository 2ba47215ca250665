"""The developer's side of repdist, beside the package itself: what the benchmarks, the checks
against the authors' code, the GPU check and the tests share, and the tools `make` runs.
Imported by name, never by path."""
