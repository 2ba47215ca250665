"""What runs the DAG around the science: config checks, download availability, the job log,
the process environment, the machine line, subnormal flushing, the training jobs' names."""
