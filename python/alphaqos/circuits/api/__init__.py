"""The HTTP API (FastAPI): thin routes over :class:`..service.CircuitService`."""

from .app import asgi, create_app

__all__ = ["asgi", "create_app"]
