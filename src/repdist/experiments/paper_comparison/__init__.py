"""The paper comparison: each claim checked against the run's own tables."""
