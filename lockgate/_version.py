"""lockgate's version, written here and nowhere else: the package's metadata (``pyproject.toml``
reads it when it builds), ``lockgate.__version__`` and ``lockgate --version`` all take it from here.

setuptools reads the literal without importing lockgate, so it stays a plain string assignment.
"""

__all__ = ["__version__"]

__version__ = "0.1.0"
