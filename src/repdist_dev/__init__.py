"""The developer's side of repdist, beside the package itself: what the benchmarks, the checks
against the authors' code (repdist_retrace), the GPU check (repdist_gpucheck) and the tests share
(the checkout and its paper settings, the measures' benchmark family of models, the literal
reference transcription of the measures), and the tools `make` runs (the DAG snapshot, the lock,
the GPU bundle and its rehearsal). Imported by name, never by path."""
