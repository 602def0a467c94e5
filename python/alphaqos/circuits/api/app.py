"""Routes of ``alphaqos circuits serve`` (the contract in docs/circuits.md).

Every route authenticates the bearer token, calls the service and returns
its JSON. The routes are coroutines that call the service directly: its
writes are serialised in the process anyway (one lock over the in-memory
index), and a thread hop per request and per dependency would only add
latency; several processes on one PostgreSQL database give more. every refusal is an RFC 9457 problem document
(:mod:`..errors`), including FastAPI's own validation errors and unknown
routes.
"""


import asyncio
import contextlib
from pathlib import Path
from typing import Annotated, Any

from fastapi import Depends, FastAPI, Header, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, JSONResponse
from fastapi.staticfiles import StaticFiles
from pydantic import BaseModel, ConfigDict
from starlette.exceptions import HTTPException as StarletteHTTPException

from ..errors import Problem
from ..service import CircuitService, Principal, parse_time

WEB = Path(__file__).resolve().parents[1] / "web"
PROBLEM = "application/problem+json"


class ReservationIn(BaseModel):
    """A reservation request: one of ``rate``, ``profile`` or ``bytes`` with ``deadline``."""

    model_config = ConfigDict(extra="forbid")
    src: str
    dst: str
    rate: int | str | None = None
    profile: list[list[Any]] | None = None
    bytes: int | str | None = None
    deadline: str | None = None
    start: str | None = None
    end: str | None = None
    margin: float | None = None
    policing: str | None = None
    description: str | None = None


class ModifyIn(BaseModel):
    """A new version: a new ``rate`` (from now on), a whole ``profile``, or a new ``end``."""

    model_config = ConfigDict(extra="forbid")
    rate: int | str | None = None
    profile: list[list[Any]] | None = None
    end: str | None = None


class TokenIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    role: str
    name: str | None = None


def _problem(p: Problem) -> JSONResponse:
    return JSONResponse(p.document(), status_code=p.status, media_type=PROBLEM)


def create_app(service: CircuitService, *, expire_every: float = 1.0) -> FastAPI:
    @contextlib.asynccontextmanager
    async def lifespan(_app: FastAPI):
        async def sweep() -> None:
            while True:
                await asyncio.sleep(expire_every)
                with contextlib.suppress(Exception):
                    await asyncio.to_thread(service.expire_due)

        service.expire_due()  # holds that ran out while the service was down
        task = asyncio.create_task(sweep())
        try:
            yield
        finally:
            task.cancel()

    app = FastAPI(title="alphaqos circuits", version="1", lifespan=lifespan,
                  description="Advance reservation of bandwidth, booked exactly (docs/circuits.md).")  # fmt: skip

    @app.exception_handler(Problem)
    async def _on_problem(_request: Request, exc: Problem):
        return _problem(exc)

    @app.exception_handler(RequestValidationError)
    async def _on_validation(_request: Request, exc: RequestValidationError):
        errors = [(tuple(e["loc"]), e["msg"]) for e in exc.errors()]
        first = ".".join(str(x) for x in errors[0][0]) if errors else "request"
        return _problem(Problem(422, f"{first}: {errors[0][1] if errors else 'invalid'}", errors=errors))

    @app.exception_handler(StarletteHTTPException)
    async def _on_http(_request: Request, exc: StarletteHTTPException):
        return _problem(Problem(exc.status_code, str(exc.detail)))

    async def who(authorization: Annotated[str | None, Header()] = None) -> Principal:
        return service.authenticate(authorization)

    Who = Annotated[Principal, Depends(who)]

    async def admin(principal: Who) -> Principal:
        if principal.role != "admin":
            raise Problem(403, f"only an admin may do this (the token's role is {principal.role})")
        return principal

    @app.post("/api/v1/reservations", status_code=201)
    async def reserve(body: ReservationIn, principal: Who) -> dict:
        return service.reserve(principal, body.model_dump(exclude_none=True))

    @app.get("/api/v1/reservations")
    async def list_reservations(principal: Who, state: str | None = None) -> list[dict]:
        return service.list(principal, state)

    @app.get("/api/v1/reservations/{resv_id}")
    async def show(resv_id: int, principal: Who) -> dict:
        return service.get(principal, resv_id)

    @app.patch("/api/v1/reservations/{resv_id}")
    async def modify(resv_id: int, body: ModifyIn, principal: Who) -> dict:
        return service.modify(principal, resv_id, body.model_dump(exclude_none=True))

    @app.post("/api/v1/reservations/{resv_id}/{action}")
    async def act(resv_id: int, action: str, principal: Who) -> dict:
        return service.act(principal, resv_id, action)

    @app.get("/api/v1/reservations/{resv_id}/events")
    async def events(resv_id: int, principal: Who, after: int = 0) -> list[dict]:
        return service.events(principal, resv_id, after)

    @app.get("/api/v1/links")
    async def links(principal: Who) -> list[dict]:
        return service.links()

    @app.get("/api/v1/links/{link_id}/bookings")
    async def bookings(link_id: str, principal: Who, from_: Annotated[str | None, Query(alias="from")] = None,
                 to: str | None = None) -> dict:  # fmt: skip
        start = parse_time(from_, ("query", "from")) if from_ else None
        end = parse_time(to, ("query", "to")) if to else None
        return service.bookings(link_id, start, end)

    @app.get("/api/v1/topology")
    async def topology(principal: Annotated[Principal, Depends(admin)]) -> dict:
        return {"nodes": [{"name": n.name, "router": n.router, "address": n.address} for n in service.topology.nodes.values()],
                "links": [{**l.as_json(), "reservable_share": l.reservable_share, "policing": l.policing}
                          for l in service.topology.links]}  # fmt: skip

    @app.get("/api/v1/tokens")
    async def tokens(principal: Annotated[Principal, Depends(admin)]) -> list[dict]:
        return service.tokens()

    @app.post("/api/v1/tokens", status_code=201)
    async def create_token(body: TokenIn, principal: Annotated[Principal, Depends(admin)]) -> dict:
        token, name = service.create_token(body.role, body.name)
        return {"token": token, "name": name, "role": body.role}

    @app.get("/", include_in_schema=False)
    def index() -> FileResponse:
        return FileResponse(WEB / "index.html", media_type="text/html")

    app.mount("/static", StaticFiles(directory=WEB), name="static")
    return app
