"""Prudence: empirical re-identification risk vs utility of mobility data (PRUDEnce)."""

# The package's version, read by pyproject.toml (`[tool.setuptools.dynamic]`): a constant,
# so that starting the command line does not search the installed distributions for it.
__version__ = "0.1.0"
