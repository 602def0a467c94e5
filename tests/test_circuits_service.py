"""The circuits service over HTTP (``alphaqos circuits serve`` as a child
process on 127.0.0.1), the same suite against SQLite and against a
throw-away PostgreSQL cluster: the lifecycle and its audit log, bytes and a
deadline, bad input (RFC 9457 problems naming the field, the CLI's one line
and exit status 2, nothing booked), tokens and roles, 64 clients racing for
the last capacity of a link, and SIGKILL in the middle of a batch."""

from __future__ import annotations

import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest
from _circuits import Server, postgres_cluster
from sqlalchemy import create_engine, text

from alphaqos.circuits.config import database_url

MBPS = 10**6


@pytest.fixture(scope="module")
def pg():
    with postgres_cluster() as cluster:
        yield cluster


def _db_url(kind: str, tmp: Path, pg_cluster, name: str) -> str:
    if kind == "sqlite":
        return f"sqlite:///{tmp / (name + '.db')}"
    return pg_cluster.create_database(name)


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def service(request, tmp_path_factory):
    """One server per back-end for the module, with tokens of every role. On
    SQLite two server processes (``serve --workers 2``), so that every test
    also checks that two processes on one database keep each other's
    bookings, shares and revocations (requests land on either); on
    PostgreSQL one (two more Python start-ups cost the suite's time budget;
    two instances on one database are the in-process tests' case)."""
    tmp = tmp_path_factory.mktemp(f"circuits-{request.param}")
    cluster = request.getfixturevalue("pg") if request.param == "postgresql" else None
    server = Server(tmp, _db_url(request.param, tmp, cluster, "api"), workers=2 if request.param == "sqlite" else 1)
    server.tokens = {name: server.token(role, name) for name, role in
                     (("alice", "user"), ("bob", "user"), ("olga", "operator"), ("ada", "admin"))}  # fmt: skip
    server.kind = request.param
    server.start(timeout=120)  # three Python start-ups on a loaded machine
    try:
        yield server
    finally:
        server.stop()


def _iso(t: datetime) -> str:
    return t.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _t(text_: str) -> datetime:
    return datetime.fromisoformat(text_.replace("Z", "+00:00"))


def _window(day: int) -> datetime:
    """A start of its own for each test (the module's server is shared)."""
    return datetime.now(UTC).replace(minute=0, second=0, microsecond=0) + timedelta(days=day, hours=2)


class Api:
    def __init__(self, server: Server, who: str | None):
        headers = {"Authorization": f"Bearer {server.tokens[who]}"} if who else {}
        self.client = httpx.Client(base_url=server.url, headers=headers, timeout=60)

    def __getattr__(self, name):
        return getattr(self.client, name)


def _steps(api: Api, link: str, start: datetime, end: datetime) -> list:
    r = api.get(f"/api/v1/links/{link}/bookings", params={"from": _iso(start), "to": _iso(end)})
    assert r.status_code == 200, r.text
    return r.json()["steps"]


def test_lifecycle_versions_audit_log_and_southbound(service):
    alice = Api(service, "alice")
    start = _window(1)
    end = start + timedelta(hours=2)
    r = alice.post("/api/v1/reservations", json={"src": "H1", "dst": "H2", "rate": "600Mbps", "start": _iso(start),
                                                 "end": _iso(end), "description": "run 7"})  # fmt: skip
    assert r.status_code == 201, r.text
    resv = r.json()
    assert resv["state"] == "held" and resv["version"] == 1 and resv["owner"] == "alice"
    assert resv["path"] == ["H1-R1", "R1-R2", "R2-R4", "R4-H2"] and resv["rate_bps"] == 600 * MBPS
    assert resv["profile"] == [[_iso(start), 600 * MBPS]] and resv["policing"] == "hard"  # the edge port R1-H1 polices hard
    assert _t(resv["hold_expires"]) - _t(resv["created"]) == timedelta(seconds=120)
    # The second 600 Mbit/s does not fit R1-R2 (800 reservable) and takes the other route.
    other = alice.post("/api/v1/reservations", json={"src": "H1", "dst": "H2", "rate": 600 * MBPS, "start": _iso(start),
                                                     "end": _iso(end)}).json()  # fmt: skip
    assert other["path"] == ["H1-R1", "R1-R3", "R3-R4", "R4-H2"]
    assert _steps(alice, "R1-R2", start - timedelta(hours=1), end + timedelta(hours=1)) == [
        [_iso(start - timedelta(hours=1)), 0], [_iso(start), 600 * MBPS], [_iso(end), 0]]  # fmt: skip

    rid = resv["id"]
    assert alice.post(f"/api/v1/reservations/{rid}/commit").json()["state"] == "reserved"
    provisioned = alice.post(f"/api/v1/reservations/{rid}/provision")
    assert provisioned.status_code == 200 and provisioned.json()["state"] == "provisioned"
    out = service.tmp / "state" / "reservations" / str(rid)
    junos = (out / "junos.conf").read_text()
    assert "bandwidth-limit 600000000 " in junos and "then discard" in junos  # the edge port R1-H1 polices hard
    # Modify: a new version admitted against everything but itself (600 -> 800 fits only so), rendered again.
    modified = alice.patch(f"/api/v1/reservations/{rid}", json={"rate": "800Mbps"})
    assert modified.status_code == 200, modified.text
    assert modified.json()["version"] == 2 and modified.json()["rate_bps"] == 800 * MBPS
    assert json.loads((out / "southbound.json").read_text())["version"] == 2
    assert "+set firewall policer circuit-1-policer if-exceeding bandwidth-limit 800000000 " in (out / "junos.conf.diff").read_text()
    too_much = alice.patch(f"/api/v1/reservations/{rid}", json={"rate": "801Mbps"})
    assert too_much.status_code == 409 and too_much.json()["max_bookable_bps"] == 800 * MBPS
    assert alice.get(f"/api/v1/reservations/{rid}").json()["version"] == 2
    assert alice.post(f"/api/v1/reservations/{rid}/release").json()["state"] == "reserved"
    assert alice.post(f"/api/v1/reservations/{rid}/terminate").json()["state"] == "terminated"
    assert alice.post(f"/api/v1/reservations/{other['id']}/abort").json()["state"] == "aborted"
    assert _steps(alice, "R1-R2", start, end) == [[_iso(start), 0]]
    again = alice.post(f"/api/v1/reservations/{rid}/commit")
    assert again.status_code == 409 and "terminated" in again.json()["detail"]

    events = alice.get(f"/api/v1/reservations/{rid}/events").json()
    assert [(e["action"], e["old_state"], e["new_state"], e["old_version"], e["new_version"]) for e in events] == [
        ("reserve", None, "held", None, 1), ("commit", "held", "reserved", 1, 1),
        ("provision", "reserved", "provisioned", 1, 1), ("modify", "provisioned", "provisioned", 1, 2),
        ("release", "provisioned", "reserved", 2, 2), ("terminate", "reserved", "terminated", 2, 2)]  # fmt: skip
    assert {e["who"] for e in events} == {"alice"}
    assert alice.get("/api/v1/reservations", params={"state": "terminated"}).json()[-1]["id"] == rid
    doc = httpx.get(service.url + "/openapi.json").json()
    assert "/api/v1/reservations/{resv_id}/events" in doc["paths"]


def test_bytes_and_deadline_smallest_rate_and_refusal(service):
    alice = Api(service, "alice")
    start = _window(2)
    deadline = start + timedelta(hours=2)
    # 90 GB in 2 h: 100 Mbit/s, times the margin 1.1.
    r = alice.post("/api/v1/reservations", json={"src": "H1", "dst": "H2", "bytes": 90 * 10**9, "start": _iso(start),
                                                 "deadline": _iso(deadline)})  # fmt: skip
    assert r.status_code == 201, r.text
    assert r.json()["rate_bps"] == 110 * MBPS and r.json()["end"] == _iso(deadline)
    # 720 GB more by the same deadline: 880 Mbit/s with the margin; each route has 800 (one 690) free.
    big = {"src": "H1", "dst": "H2", "bytes": 720 * 10**9, "start": _iso(start), "deadline": _iso(deadline)}
    before = _steps(alice, "R1-R3", start, deadline)
    refused = alice.post("/api/v1/reservations", json=big)
    assert refused.status_code == 409 and refused.headers["content-type"] == "application/problem+json"
    doc = refused.json()
    assert doc["max_bookable_bps"] == 800 * MBPS
    # The earliest finish at 800 Mbit/s constant from the start: 720e9 * 8 * 1.1 / 800e6 s = 7920 s.
    assert _t(doc["earliest_finish"]) == start + timedelta(seconds=7920)
    assert _steps(alice, "R1-R3", start, deadline) == before
    # Asked for that finish, it fits.
    ok = alice.post("/api/v1/reservations", json={**big, "deadline": doc["earliest_finish"]})
    assert ok.status_code == 201 and ok.json()["rate_bps"] == 800 * MBPS


BAD = [
    ({"rate": 0}, ["body", "rate"], "above 0"),
    ({"rate": "-5Mbps"}, ["body", "rate"], ""),
    ({"end": "START"}, ["body", "end"], "at or before the start"),
    ({"start": "PAST", "end": "END"}, ["body", "start"], "in the past"),
    ({"dst": "H9"}, ["body", "dst"], "unknown endpoint 'H9'"),
    ({"rate": None, "bytes": 10**9, "end": None, "deadline": "START"}, ["body", "deadline"], "no rate can meet it"),
    ({"rate": None, "profile": [["START", "100Mbps"], ["LATER", "200Mbps"], ["SOON", "50Mbps"]]},
     ["body", "profile", 2, 0], "ordered in time"),
    ({"policing": "gentle"}, ["body", "policing"], "expected one of hard, soft, scavenger"),
    ({"src": None}, ["body", "src"], ""),
    ({"colour": "red"}, ["body", "colour"], "unexpected field"),
    ({"src": 7}, ["body", "src"], "required: a host or router"),
    ({"rate": [1]}, ["body", "rate"], "expected a rate"),
    ({"margin": "big", "rate": None, "bytes": 10**9, "end": None, "deadline": "END"}, ["body", "margin"], "expected a number"),
]


def test_bad_input_is_a_problem_naming_the_field_and_books_nothing(service):
    alice = Api(service, "alice")
    start = _window(3)
    names = {"START": _iso(start), "END": _iso(start + timedelta(hours=1)), "PAST": _iso(start - timedelta(days=4)),
             "LATER": _iso(start + timedelta(minutes=20)), "SOON": _iso(start + timedelta(minutes=10))}  # fmt: skip
    base = {"src": "H1", "dst": "H2", "rate": "100Mbps", "start": names["START"], "end": names["END"]}
    count = len(alice.get("/api/v1/reservations").json())
    for change, loc, words in BAD:
        body = {**base, **{k: names.get(v, v) if isinstance(v, str) else v for k, v in change.items()}}
        if "profile" in change:
            body["profile"] = [[names[t], r] for t, r in change["profile"]]
        body = {k: v for k, v in body.items() if v is not None}
        r = alice.post("/api/v1/reservations", json=body)
        assert r.status_code == 422, (change, r.text)
        assert r.headers["content-type"] == "application/problem+json"
        doc = r.json()
        assert doc["status"] == 422 and doc["title"] and doc["type"] == "about:blank"
        assert doc["errors"][0]["loc"] == loc, (change, doc)
        assert words in doc["errors"][0]["msg"] or words in doc["detail"], (change, doc)
    assert len(alice.get("/api/v1/reservations").json()) == count
    assert _steps(alice, "R1-R2", start - timedelta(hours=1), start + timedelta(hours=12))[1:] == []

    # A modify of a terminated reservation: 409, the version unchanged.
    made = alice.post("/api/v1/reservations", json=base).json()
    alice.post(f"/api/v1/reservations/{made['id']}/terminate")
    r = alice.patch(f"/api/v1/reservations/{made['id']}", json={"rate": "1Mbps"})
    assert r.status_code == 409 and "cannot modify a terminated reservation" in r.json()["detail"]
    assert alice.get(f"/api/v1/reservations/{made['id']}").json()["version"] == 1

    # The CLI: the problem on one line, exit status 2, nothing booked.
    done = service.cli("reserve", "--src", "H1", "--dst", "H2", "--rate", "0", "--start", names["START"], "--end",
                       names["END"], token=service.tokens["alice"])  # fmt: skip
    assert done.returncode == 2, done
    assert done.stderr.count("\n") == 1 and "body.rate: must be above 0" in done.stderr
    assert len(alice.get("/api/v1/reservations").json()) == count + 1


def test_tokens_and_roles(service):
    alice, bob, olga, ada = (Api(service, n) for n in ("alice", "bob", "olga", "ada"))
    anonymous = Api(service, None)
    start = _window(4)
    body = {"src": "H3", "dst": "H2", "rate": "10Mbps", "start": _iso(start), "end": _iso(start + timedelta(hours=1))}
    r = anonymous.post("/api/v1/reservations", json=body)
    assert r.status_code == 401 and r.headers["content-type"] == "application/problem+json"
    wrong = httpx.post(service.url + "/api/v1/reservations", json=body, headers={"Authorization": "Bearer aqc_nope"})
    assert wrong.status_code == 401
    assert _steps(alice, "H3-R1", start, start + timedelta(hours=1)) == [[_iso(start), 0]]
    mine = alice.post("/api/v1/reservations", json=body).json()
    # Bob neither sees nor changes Alice's reservation.
    assert mine["id"] not in [x["id"] for x in bob.get("/api/v1/reservations").json()]
    assert bob.get(f"/api/v1/reservations/{mine['id']}").status_code == 403
    assert bob.post(f"/api/v1/reservations/{mine['id']}/terminate").status_code == 403
    assert bob.patch(f"/api/v1/reservations/{mine['id']}", json={"rate": "1Mbps"}).status_code == 403
    assert alice.get(f"/api/v1/reservations/{mine['id']}").json()["state"] == "held"
    # The operator sees and acts on all; only the admin manages tokens and reads the topology.
    assert mine["id"] in [x["id"] for x in olga.get("/api/v1/reservations").json()]
    assert olga.post(f"/api/v1/reservations/{mine['id']}/commit").json()["state"] == "reserved"
    assert alice.get(f"/api/v1/reservations/{mine['id']}/events").json()[-1]["who"] == "olga"
    for api in (alice, olga):
        assert api.get("/api/v1/tokens").status_code == 403
        assert api.post("/api/v1/tokens", json={"role": "admin"}).status_code == 403
    assert len(ada.get("/api/v1/tokens").json()) == 4
    made = ada.post("/api/v1/tokens", json={"role": "user", "name": "carol"})
    assert made.status_code == 201
    carol = httpx.get(service.url + "/api/v1/reservations", headers={"Authorization": f"Bearer {made.json()['token']}"})
    assert carol.status_code == 200 and carol.json() == []
    assert ada.get("/api/v1/topology").json()["links"][0]["reservable_share"] == 0.8
    # Stored hashed: the database does not hold the token.
    engine = create_engine(database_url(service.db))
    with engine.connect() as c:
        hashes = [row[0] for row in c.execute(text("SELECT sha256 FROM tokens"))]
    engine.dispose()
    assert service.tokens["alice"] not in hashes and len(hashes) == 5
    # Topology and tokens are the admin's: 401 without a token, 403 for the
    # other roles, and nothing changed by either.
    carol_token = made.json()["token"]
    carol_id = next(t["id"] for t in ada.get("/api/v1/tokens").json() if t["name"] == "carol")
    share = {"reservable_share": 0.5}
    for api, status in ((anonymous, 401), (alice, 403), (olga, 403)):
        assert api.put("/api/v1/links/R1-R2", json=share).status_code == status
        assert api.delete(f"/api/v1/tokens/{carol_id}").status_code == status
    assert alice.get("/api/v1/links").json() == ada.get("/api/v1/links").json()
    assert next(l for l in alice.get("/api/v1/links").json() if l["id"] == "R1-R2")["reservable_bps"] == 800 * MBPS
    # Alice's 10 Mbit/s reserved on H3-R1 (10 Gbit/s): a share under it is refused, one above it taken.
    assert ada.put("/api/v1/links/H3-R1", json={"reservable_share": 0.0005}).status_code == 409
    assert ada.put("/api/v1/links/nowhere", json=share).status_code == 404
    assert ada.put("/api/v1/links/R1-R2", json={"reservable_share": 1.5}).status_code == 422
    changed = ada.put("/api/v1/links/H3-R1", json={"reservable_share": 0.002})
    assert changed.status_code == 200 and changed.json()["reservable_bps"] == 20 * MBPS
    assert alice.get(f"/api/v1/links/H3-R1/bookings").json()["reservable_bps"] == 20 * MBPS
    more = {**body, "rate": "11Mbps"}
    assert alice.post("/api/v1/reservations", json=more).status_code == 409  # 10 + 11 > 20 Mbit/s
    assert ada.put("/api/v1/links/H3-R1", json={"reservable_share": 0.8}).status_code == 200
    # A revoked token is refused at once (the server had it cached by the request above).
    assert ada.delete(f"/api/v1/tokens/{carol_id}").json()["revoked"] is not None
    gone = httpx.get(service.url + "/api/v1/reservations", headers={"Authorization": f"Bearer {carol_token}"})
    assert gone.status_code == 401 and "revoked" in gone.json()["detail"]
    assert ada.delete("/api/v1/tokens/999999").status_code == 404


def _db_bookings(url: str, link: str) -> list[tuple[list, int]]:
    engine = create_engine(database_url(url))
    with engine.connect() as c:
        rows = [(json.loads(p) if isinstance(p, str) else p, e) for p, e in
                c.execute(text("SELECT profile, end_ns FROM bookings WHERE link_id = :l"), {"l": link})]  # fmt: skip
    engine.dispose()
    return rows


def test_64_clients_race_for_the_last_capacity(service):
    alice = Api(service, "alice")
    start = _window(5)
    end = start + timedelta(hours=1)
    body = {"src": "H1", "dst": "H2", "start": _iso(start), "end": _iso(end)}
    # 500 Mbit/s on each route leaves 300 on each bottleneck: 6 of 100 Mbit/s fit.
    for _ in range(2):
        assert alice.post("/api/v1/reservations", json={**body, "rate": "500Mbps"}).status_code == 201
    barrier = threading.Barrier(64)

    def one(_i):
        with httpx.Client(base_url=service.url, headers={"Authorization": f"Bearer {service.tokens['alice']}"},
                          timeout=120) as c:  # fmt: skip
            barrier.wait()
            return c.post("/api/v1/reservations", json={**body, "rate": "100Mbps"})

    with ThreadPoolExecutor(64) as pool:
        answers = list(pool.map(one, range(64)))
    codes = sorted(a.status_code for a in answers)
    assert codes == [201] * 6 + [409] * 58, codes
    admitted = [a.json() for a in answers if a.status_code == 201]
    for link in ("R1-R2", "R1-R3"):
        steps = _steps(alice, link, start, end)
        assert steps == [[_iso(start), 800 * MBPS]]
        # The database's bookings of the window are the two and the admitted ones.
        s_ns = int(start.timestamp()) * 10**9
        rows = [(p, e) for p, e in _db_bookings(service.db, link) if p[0][0] == s_ns and e == s_ns + 3600 * 10**9]
        assert sum(p[0][1] for p, _ in rows) == 500 * MBPS + sum(r["rate_bps"] for r in admitted if link in r["path"])


def test_admin_cli_and_the_audit_log(service, capsys):
    """``circuits link share``, ``token list|revoke`` and ``audit``: tables or
    JSON, a refusal on one line with exit status 2 and nothing changed; each
    change an audit event (who, when, old and new value) that an operator or
    admin reads, a user may not."""
    from alphaqos.cli import main

    alice, olga, ada = (Api(service, n) for n in ("alice", "olga", "ada"))
    # R2-R1 (1 Gbit/s): no route to H2 books it, so no other test's bookings bound its share.

    def run(*args: str, who: str = "ada") -> tuple[int, str, str]:
        capsys.readouterr()
        status = main(["circuits", *args, "--url", service.url, "--token", service.tokens[who]])
        out, err = capsys.readouterr()
        return status, out, err

    def reservable(link: str) -> int:
        return next(l for l in alice.get("/api/v1/links").json() if l["id"] == link)["reservable_bps"]

    status, out, err = run("link", "share", "R2-R1", "70%")
    assert status == 0 and "link R2-R1: reservable 700 Mbps (70% of 1 Gbps), set by ada" in out, (out, err)
    assert reservable("R2-R1") == 700 * MBPS
    status, out, _ = run("link", "share", "R2-R1", "0.8", "--json")
    assert status == 0 and json.loads(out)["reservable_bps"] == 800 * MBPS
    status, out, _ = run("link", "list")
    assert status == 0 and "R2-R1" in out and "80%" in out
    for args, who, words in ((("link", "share", "R2-R1", "170%"), "ada", "share: expected a percentage"),
                             (("link", "share", "R2-R1", "lots"), "ada", "share: expected a percentage"),
                             (("link", "share", "nowhere", "50%"), "ada", "404: path.id: no such link"),
                             (("link", "share", "R2-R1", "50%"), "olga", "403: only an admin"),
                             (("token", "revoke", "999999"), "ada", "404: path.id: no token 999999"),
                             (("audit",), "alice", "403: only an operator or an admin")):  # fmt: skip
        status, out, err = run(*args, who=who)
        assert status == 2 and out == "" and err.count("\n") == 1 and words in err, (args, err)
    assert reservable("R2-R1") == 800 * MBPS

    made = ada.post("/api/v1/tokens", json={"role": "user", "name": "dave"}).json()
    status, out, _ = run("token", "list", "--json")
    dave = next(t for t in json.loads(out) if t["name"] == "dave")
    assert status == 0 and dave["revoked"] is None and dave["role"] == "user"
    status, out, _ = run("token", "list")
    assert status == 0 and "dave" in out
    status, out, _ = run("token", "revoke", str(dave["id"]))
    assert status == 0 and out.startswith(f"token {dave['id']} (dave, user) revoked at ")
    assert httpx.get(service.url + "/api/v1/reservations", headers={"Authorization": f"Bearer {made['token']}"}).status_code == 401

    assert Api(service, None).get("/api/v1/audit").status_code == 401
    assert alice.get("/api/v1/audit").status_code == 403
    events = olga.get("/api/v1/audit").json()
    mine = [e for e in events if e["target"] in ("R2-R1", str(dave["id"]))]
    assert [(e["action"], e["who"]) for e in mine] == [("link_share", "ada"), ("link_share", "ada"),
                                                       ("token_create", "ada"), ("token_revoke", "ada")]  # fmt: skip
    assert mine[0]["old"] == {"reservable_bps": 800 * MBPS, "reservable_share": 0.8}
    assert mine[0]["new"] == {"reservable_bps": 700 * MBPS, "reservable_share": 0.7}
    assert mine[1]["new"] == {"reservable_bps": 800 * MBPS, "reservable_share": 0.8}
    assert mine[2]["new"] == {"id": dave["id"], "name": "dave", "role": "user"}
    assert mine[3]["old"]["revoked"] is None and mine[3]["new"]["revoked"] is not None
    assert all(abs(_t(e["at"]) - datetime.now(UTC)) < timedelta(minutes=5) for e in mine)
    # The tokens made at the start (alphaqos circuits token create, on the machine) are there too.
    assert {("token_create", "local")} <= {(e["action"], e["who"]) for e in events}
    status, out, _ = run("audit", "--json", who="olga")
    assert status == 0 and json.loads(out) == events
    status, out, _ = run("audit", "--after", str(mine[2]["id"]), who="olga")
    assert status == 0 and "token_revoke" in out and "token_create" not in out


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_sigkill_mid_batch_loses_nothing_acknowledged(request, tmp_path, backend):
    tmp = tmp_path
    cluster = request.getfixturevalue("pg") if backend == "postgresql" else None
    server = Server(tmp, _db_url(backend, tmp, cluster, "crash"), hold_timeout=2.0)
    token = server.token("user", "dora")
    server.start()
    start = _window(6)
    end = start + timedelta(hours=1)
    acked: dict[int, str] = {}
    stop = threading.Event()

    def client(i: int) -> None:
        with httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {token}"}, timeout=30) as c:
            k = 0
            while not stop.is_set():
                k += 1
                try:
                    r = c.post("/api/v1/reservations", json={"src": "H1", "dst": "H2", "rate": 10**6 + i * 1000 + k,
                                                              "start": _iso(start), "end": _iso(end)})  # fmt: skip
                    if r.status_code == 201:
                        acked[r.json()["id"]] = "held"
                        if k % 2:
                            c2 = c.post(f"/api/v1/reservations/{r.json()['id']}/commit")
                            if c2.status_code == 200:
                                acked[r.json()["id"]] = "reserved"
                except httpx.HTTPError:
                    return

    try:
        threads = [threading.Thread(target=client, args=(i,)) for i in range(8)]
        for t in threads:
            t.start()
        deadline = time.monotonic() + 60
        while len(acked) < 24 and time.monotonic() < deadline:
            time.sleep(0.02)
        server.kill()
        stop.set()
        for t in threads:
            t.join()
        assert len(acked) >= 24
        time.sleep(2.2)  # every hold has run out while the service is down
        server.start()
        with httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {token}"}, timeout=30) as c:
            listed = {r["id"]: r for r in c.get("/api/v1/reservations").json()}
            for rid, state in acked.items():
                assert rid in listed, f"acknowledged reservation {rid} lost"
                # A commit whose answer the kill cut off may have committed: held ones are expired or reserved.
                assert listed[rid]["state"] in (("reserved",) if state == "reserved" else ("expired", "reserved")), listed[rid]
            assert not [r for r in listed.values() if r["state"] == "held"]
            # No partial reservation: each one's bookings are on every link of its path or none.
            booked = {link: _db_bookings(server.db, link) for link in ("H1-R1", "R1-R2", "R1-R3")}
            live = [r for r in listed.values() if r["state"] == "reserved"]
            total = sum(p[0][1] for p, _ in booked["H1-R1"])
            assert total == sum(r["rate_bps"] for r in live)
            assert sum(p[0][1] for p, _ in booked["R1-R2"] + booked["R1-R3"]) == total
            steps = c.get("/api/v1/links/H1-R1/bookings", params={"from": _iso(start), "to": _iso(end)}).json()["steps"]
            assert steps == [[_iso(start), total]]
    finally:
        stop.set()
        server.stop()

