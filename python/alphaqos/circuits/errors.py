"""Problems as RFC 9457 documents (``application/problem+json``).

Every refusal of the service is a :class:`Problem`: an HTTP status, a title,
a one-line detail and, for bad fields, ``errors: [{loc: [...], msg}]`` with
the field's path in the request (``["body", "profile", 2, 0]``). The CLI
prints the same as one line and exits 2.
"""

from __future__ import annotations

from typing import Any

from ..errors import format_path

TITLES = {400: "Bad Request", 401: "Unauthorized", 403: "Forbidden", 404: "Not Found", 409: "Conflict",
          422: "Unprocessable Content", 500: "Internal Server Error", 502: "Bad Gateway"}  # fmt: skip


class Problem(Exception):
    """A refusal the client can act on; ``extra`` members go into the document."""

    def __init__(self, status: int, detail: str, *, errors: list[tuple[tuple, str]] | None = None,
                 type_: str = "about:blank", **extra: Any):  # fmt: skip
        super().__init__(detail)
        self.status, self.detail, self.type = status, detail, type_
        self.errors = [(tuple(loc), msg) for loc, msg in errors or []]
        self.extra = extra

    def document(self) -> dict[str, Any]:
        doc: dict[str, Any] = {"type": self.type, "title": TITLES.get(self.status, "Error"), "status": self.status,
                               "detail": self.detail}  # fmt: skip
        if self.errors:
            doc["errors"] = [{"loc": list(loc), "msg": msg} for loc, msg in self.errors]
        doc.update(self.extra)
        return doc


def field(loc: tuple, msg: str, status: int = 422) -> Problem:
    """A problem with one field: ``body.rate: must be above 0``."""
    where = format_path(tuple(loc))
    return Problem(status, f"{where}: {msg}", errors=[(loc, msg)])


def one_line(doc: dict[str, Any]) -> str:
    """A problem document as the CLI prints it."""
    text = doc.get("detail") or doc.get("title") or f"HTTP {doc.get('status')}"
    shown = {format_path(tuple(e.get("loc", ()))) for e in doc.get("errors") or []}
    extra = [f"{format_path(tuple(e.get('loc', ())))}: {e.get('msg')}" for e in doc.get("errors") or []
             if not text.startswith(format_path(tuple(e.get("loc", ()))))]  # fmt: skip
    if len(shown) > 1 or extra:
        text = "; ".join(dict.fromkeys([text, *extra]))
    for key in ("earliest_finish", "max_bookable_bps"):
        if key in doc:
            text += f"; {key.replace('_', ' ')}: {doc[key]}"
    return text
