"""Figures: functions from tables to matplotlib figures, saved atomically as PDF and PNG."""
