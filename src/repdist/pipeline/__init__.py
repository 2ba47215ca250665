"""What runs the DAG around the science: config checks, downloads, job logs, GPUs, warm starts."""
