"""The reservation service's client for a transfer (``alphaqos circuits``,
``docs/circuits.md``): reserve bytes by a deadline, commit and provision,
modify the rate as the deadline loop asks, terminate when done."""

from __future__ import annotations

import re
from datetime import datetime, timezone
from typing import Any


class CircuitError(Exception):
    """A refusal or an unreachable service (``status``: the exit status)."""

    def __init__(self, message: str, status: int = 2, doc: dict | None = None):
        super().__init__(message)
        self.status, self.doc = status, doc or {}


def iso(t: float) -> str:
    return datetime.fromtimestamp(t, timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class Circuit:
    """One reservation of the service at ``url`` (the service's root, or a
    reservation's URL ``.../api/v1/reservations/ID`` to take over)."""

    def __init__(self, url: str, token: str | None):
        m = re.match(r"^(.*?)/api/v1/reservations/([^/?#]+)/?$", url)
        self.root = (m.group(1) if m else url).rstrip("/")
        self.id: str | None = m.group(2) if m else None
        self.token = token
        self.doc: dict[str, Any] = {}

    def _call(self, method: str, path: str, body: dict | None = None) -> dict:
        import httpx

        from ..circuits.errors import one_line

        headers = {"Authorization": f"Bearer {self.token}"} if self.token else {}
        try:
            answer = httpx.request(method, self.root + path, json=body, headers=headers, timeout=30)
        except httpx.HTTPError as exc:
            raise CircuitError(f"cannot reach the circuits service at {self.root}: {exc}", 2) from None
        try:
            doc = answer.json()
        except ValueError:
            doc = {}
        if answer.status_code == 401:
            raise CircuitError(f"the circuits service refused the token (401: {one_line(doc)})", 2, doc)
        if answer.status_code >= 400:
            text = one_line(doc) if isinstance(doc, dict) else f"HTTP {answer.status_code}"
            raise CircuitError(f"{answer.status_code}: {text}", 2 if answer.status_code < 500 else 1, doc)
        return doc

    def reserve(self, src: str, dst: str, nbytes: int, start: float, deadline: float, margin: float) -> int:
        """Book ``nbytes`` by ``deadline`` (or take over the given reservation);
        commit and provision. Returns the reserved rate, bit/s."""
        if self.id is None:
            try:
                self.doc = self._call("POST", "/api/v1/reservations",
                                      {"src": src, "dst": dst, "bytes": nbytes, "start": iso(start), "deadline": iso(deadline),
                                       "margin": margin, "description": "alphaqos transfer"})  # fmt: skip
            except CircuitError as exc:
                if exc.doc.get("status") == 409 and "earliest_finish" in exc.doc:
                    finish = exc.doc.get("earliest_finish")
                    raise CircuitError(f"deadline {iso(deadline)} infeasible: the circuits service's earliest finish for "
                                       f"{nbytes} bytes is {finish} (largest bookable rate "
                                       f"{exc.doc.get('max_bookable_bps')} bit/s)", 2, exc.doc) from None  # fmt: skip
                raise
            self.id = self.doc["id"]
        else:
            self.doc = self._call("GET", f"/api/v1/reservations/{self.id}")
        if self.doc.get("state") == "held":
            self.doc = self._call("POST", f"/api/v1/reservations/{self.id}/commit")
        if self.doc.get("state") == "reserved":
            try:
                self.doc = self._call("POST", f"/api/v1/reservations/{self.id}/provision")
            except CircuitError:
                pass  # a southbound failure leaves the booking reserved, which still holds the rate
        return current_rate(self.doc)

    def modify(self, bps: int) -> int:
        self.doc = self._call("PATCH", f"/api/v1/reservations/{self.id}", {"rate": bps})
        return current_rate(self.doc)

    def terminate(self) -> None:
        if self.id is not None:
            self._call("POST", f"/api/v1/reservations/{self.id}/terminate")


def current_rate(doc: dict) -> int:
    """The rate a reservation holds from now on: its profile's last step
    (``rate_bps`` is the profile's peak, which stays up after a decrease)."""
    profile = doc.get("profile") or []
    return int(profile[-1][1]) if profile else int(doc["rate_bps"])
