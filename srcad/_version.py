"""srcad's version: the one place it is written (pyproject.toml reads it from here at build time,
`srcad.__version__` and `srcad --version` import it)."""
__version__ = "0.1.0"
