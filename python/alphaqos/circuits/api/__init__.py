"""The HTTP API (FastAPI): thin routes over :class:`..service.CircuitService`."""

from .app import create_app

__all__ = ["create_app"]
