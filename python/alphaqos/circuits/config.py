"""The service's options: each a command-line option of ``alphaqos circuits
serve`` and an environment variable ``ALPHAQOS_CIRCUITS_<NAME>``
(pydantic-settings), the command line winning."""

from __future__ import annotations

from pathlib import Path

from pydantic_settings import BaseSettings, SettingsConfigDict

DEFAULT_PORT = 8722


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="ALPHAQOS_CIRCUITS_", extra="ignore")

    #: SQLAlchemy URL: ``sqlite:///circuits.db`` (WAL) or ``postgresql://user@host:port/db``.
    db: str = "sqlite:///circuits.db"
    #: Scenario YAML with the nodes and links to book (see :mod:`.topology`).
    topology: Path | None = None
    #: ``HOST:PORT`` to listen on; 127.0.0.1 unless told otherwise.
    listen: str = f"127.0.0.1:{DEFAULT_PORT}"
    #: Seconds a held reservation waits for commit before its booking is freed.
    hold_timeout: float = 120.0
    #: Per-reservation southbound directories go under ``STATE_DIR/reservations/<id>``.
    state_dir: Path = Path("circuits-state")
    #: Southbound back-end: ``dry-run`` (write files) or ``linux`` (also shape ``device``).
    backend: str = "dry-run"
    device: str | None = None
    #: Server processes (uvicorn workers), each with its own index of the
    #: bookings, kept consistent through the database (docs/circuits.md).
    workers: int = 1
    #: Default margin of a bytes+deadline request (rate = bytes / time x margin).
    margin: float = 1.1
    #: Client side: the service's URL and the bearer token.
    url: str = f"http://127.0.0.1:{DEFAULT_PORT}"
    token: str | None = None


def database_url(url: str) -> str:
    """``postgresql://`` -> ``postgresql+psycopg://`` (psycopg 3); others as given."""
    if url.startswith("postgresql://") or url.startswith("postgres://"):
        return "postgresql+psycopg://" + url.split("://", 1)[1]
    return url
