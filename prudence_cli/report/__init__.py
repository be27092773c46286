"""The catalog report: one self-contained HTML page, or the same charts as PNG files."""
