"""Dataviews: one aggregation of the selected raw data per combination of dimension values."""
