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
import logging
from pathlib import Path
from typing import Annotated, Any

import orjson
from fastapi import Depends, FastAPI, Header, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, JSONResponse, ORJSONResponse
from fastapi.staticfiles import StaticFiles
from pydantic import BaseModel, ConfigDict
from starlette.exceptions import HTTPException as StarletteHTTPException

from ..errors import Problem, field
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


class LinkIn(BaseModel):
    """An admin's change of a link: its reservable share of the capacity."""

    model_config = ConfigDict(extra="forbid")
    reservable_share: float


class TokenIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    role: str
    name: str | None = None


def _object(raw: bytes, model: type[BaseModel]) -> dict[str, Any]:
    """A request body as the service takes it, without a pydantic model built
    and dumped per request (the service checks every field itself, naming
    it): a JSON object of ``model``'s fields, nulls dropped."""
    try:
        body = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise field(("body",), f"not JSON: {exc}") from None
    if not isinstance(body, dict):
        raise field(("body",), f"expected a JSON object, got {type(body).__name__}")
    known = model.model_fields
    for key in body:
        if key not in known:
            raise field(("body", key), f"unexpected field: expected {', '.join(known)}")
    return {k: v for k, v in body.items() if v is not None}


def _body_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The OpenAPI request body of a route that reads its body itself."""
    return {"requestBody": {"required": True, "content": {"application/json": {"schema": model.model_json_schema()}}}}


def _problem(p: Problem) -> JSONResponse:
    return JSONResponse(p.document(), status_code=p.status, media_type=PROBLEM)


def _json(data: Any, status: int = 200) -> ORJSONResponse:
    """The service's JSON as it is (already plain): serialised once, by orjson,
    without FastAPI's response validation and encoding pass."""
    return ORJSONResponse(data, status_code=status)


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

    @app.post("/api/v1/reservations", status_code=201, response_model=None, openapi_extra=_body_schema(ReservationIn))
    async def reserve(request: Request, principal: Who) -> ORJSONResponse:
        return _json(service.reserve(principal, _object(await request.body(), ReservationIn)), 201)

    @app.get("/api/v1/reservations")
    async def list_reservations(principal: Who, state: str | None = None) -> list[dict]:
        return service.list(principal, state)

    @app.get("/api/v1/reservations/{resv_id}", response_model=None)
    async def show(resv_id: int, principal: Who) -> ORJSONResponse:
        return _json(service.get(principal, resv_id))

    @app.patch("/api/v1/reservations/{resv_id}", response_model=None)
    async def modify(resv_id: int, body: ModifyIn, principal: Who) -> ORJSONResponse:
        return _json(service.modify(principal, resv_id, body.model_dump(exclude_none=True)))

    @app.post("/api/v1/reservations/{resv_id}/{action}", response_model=None)
    async def act(resv_id: int, action: str, principal: Who) -> ORJSONResponse:
        return _json(service.act(principal, resv_id, action))

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

    @app.put("/api/v1/links/{link_id}")
    async def set_link(link_id: str, body: LinkIn, principal: Annotated[Principal, Depends(admin)]) -> dict:
        return service.set_link_share(principal, link_id, body.reservable_share)

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
        token, name = service.create_token(body.role, body.name, principal.name)
        return {"token": token, "name": name, "role": body.role}

    @app.delete("/api/v1/tokens/{token_id}")
    async def revoke_token(token_id: int, principal: Annotated[Principal, Depends(admin)]) -> dict:
        return service.revoke_token(principal, token_id)

    @app.get("/api/v1/audit")
    async def audit(principal: Who, after: int = 0) -> list[dict]:
        if principal.role not in ("operator", "admin"):
            raise Problem(403, f"only an operator or an admin may read the audit log (the token's role is {principal.role})")
        return service.audit(after)

    @app.get("/", include_in_schema=False)
    def index() -> FileResponse:
        return FileResponse(WEB / "index.html", media_type="text/html")

    app.mount("/static", StaticFiles(directory=WEB), name="static")
    return app


class FastReserve:
    """The hot route, ``POST /api/v1/reservations``, answered before FastAPI's
    stack (a pure ASGI wrapper): its middleware, routing and dependency
    solving cost the server more CPU than the reservation itself (profiled in
    docs/circuits.md). The same contract as the FastAPI route, which stays
    for the OpenAPI document: bearer token, the body checked by the service,
    201 with the reservation or an RFC 9457 problem. Every other request
    goes to ``app``."""

    PATH = "/api/v1/reservations"

    def __init__(self, app: FastAPI, service: CircuitService) -> None:
        self.app, self.service = app, service

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST" or scope["path"].rstrip("/") != self.PATH:
            await self.app(scope, receive, send)
            return
        chunks = []
        while True:
            message = await receive()
            chunks.append(message.get("body", b""))
            if not message.get("more_body"):
                break
        authorization = next((v.decode("latin-1") for k, v in scope["headers"] if k == b"authorization"), None)
        try:
            who = self.service.authenticate(authorization, checked_later=True)  # reserve checks it in its transaction
            status, content_type = 201, b"application/json"
            data = orjson.dumps(self.service.reserve(who, _object(b"".join(chunks), ReservationIn)))
        except Problem as p:
            status, content_type, data = p.status, PROBLEM.encode(), orjson.dumps(p.document())
        except Exception as exc:  # as Starlette's ServerErrorMiddleware: logged, a 500 answer
            logging.getLogger("alphaqos.circuits").exception("POST %s", self.PATH)
            p = Problem(500, f"internal error: {type(exc).__name__}")
            status, content_type, data = 500, PROBLEM.encode(), orjson.dumps(p.document())
        await send({"type": "http.response.start", "status": status,
                    "headers": [(b"content-type", content_type), (b"content-length", str(len(data)).encode())]})  # fmt: skip
        await send({"type": "http.response.body", "body": data})


def asgi(service: CircuitService) -> FastReserve:
    """What ``serve`` runs: the API with the reserve route's fast path."""
    return FastReserve(create_app(service), service)


def app_from_env() -> FastReserve:
    """The app of one server process of ``serve --workers N`` (a uvicorn
    factory): its settings from the ``ALPHAQOS_CIRCUITS_*`` variables that
    ``serve`` set after checking them."""
    from ..config import Settings
    from ..topology import Topology

    settings = Settings()
    topology = Topology.from_scenario(settings.topology)
    return asgi(CircuitService(settings.db, topology, hold_timeout=settings.hold_timeout, state_dir=settings.state_dir,
                               backend=settings.backend, device=settings.device, margin=settings.margin))  # fmt: skip
