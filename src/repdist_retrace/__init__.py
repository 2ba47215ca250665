"""Checks against the original code, step against step, a module for each (its docstring says
which). Each runs as `python -m repdist_retrace.NAME`; the original code is loaded from the
folder given on the command line."""
