"""Experiments: functions from configuration values to tables (pandas DataFrames)."""
