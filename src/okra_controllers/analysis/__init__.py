"""Metric analysis: templates, runs, providers, verdicts."""
