"""The installed package's version (``0+unknown`` in an uninstalled tree)."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("alphaqos")
except PackageNotFoundError:
    __version__ = "0+unknown"
