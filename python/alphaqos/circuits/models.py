"""The service's tables (SQLAlchemy 2). Times are integer nanoseconds since
the Unix epoch (UTC), rates whole bit/s, as the admission core takes them.

``links``         one row per directed link, with ``version``: bumped in the
                  transaction that changes the link's bookings, so a process
                  knows when its in-memory index of the link is stale.
``bookings``      one row per (reservation, link) booked: the step profile
                  the link carries for it; the rows of a link are its step
                  function (a list, never a set: equal rows count twice).
``reservations``  the current version of each reservation.
``booking_log``   every change of a link's bookings under the version it made
                  (other processes follow a link incrementally from it).
``events``        the audit log: every transition, who, when, versions.
``tokens``        bearer tokens, by their SHA-256 only; ``revoked_ns`` once revoked.
``audit``         the admin's changes: a link's reservable share, a token
                  created or revoked (who, when, the old and new value).
"""

from __future__ import annotations

from sqlalchemy import JSON, BigInteger, Float, ForeignKey, Index, Integer, String, Text
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column


class Base(DeclarativeBase):
    pass


class LinkRow(Base):
    __tablename__ = "links"
    id: Mapped[str] = mapped_column(String(200), primary_key=True)
    version: Mapped[int] = mapped_column(BigInteger, default=0)
    #: Set by an admin (``PUT /api/v1/links/{id}``); NULL: the topology's share.
    reservable_bps: Mapped[int | None] = mapped_column(BigInteger, nullable=True)


class Reservation(Base):
    __tablename__ = "reservations"
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    version: Mapped[int] = mapped_column(Integer, default=1)
    owner: Mapped[str] = mapped_column(String(200))
    state: Mapped[str] = mapped_column(String(20))
    src: Mapped[str] = mapped_column(String(200))
    dst: Mapped[str] = mapped_column(String(200))
    path: Mapped[list] = mapped_column(JSON)
    start_ns: Mapped[int] = mapped_column(BigInteger)
    end_ns: Mapped[int] = mapped_column(BigInteger)
    rate_bps: Mapped[int] = mapped_column(BigInteger)
    profile: Mapped[list] = mapped_column(JSON)
    policing: Mapped[str] = mapped_column(String(20))
    bytes: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    deadline_ns: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    margin: Mapped[float | None] = mapped_column(Float, nullable=True)
    hold_expires_ns: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    description: Mapped[str | None] = mapped_column(Text, nullable=True)
    created_ns: Mapped[int] = mapped_column(BigInteger)
    updated_ns: Mapped[int] = mapped_column(BigInteger)

    __table_args__ = (Index("ix_reservations_state_hold", "state", "hold_expires_ns"), Index("ix_reservations_owner", "owner"))


class BookingRow(Base):
    __tablename__ = "bookings"
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    reservation_id: Mapped[int] = mapped_column(ForeignKey("reservations.id"), index=True)
    link_id: Mapped[str] = mapped_column(ForeignKey("links.id"), index=True)
    profile: Mapped[list] = mapped_column(JSON)
    end_ns: Mapped[int] = mapped_column(BigInteger)


class BookingLog(Base):
    """Every change of a link's bookings, under the link's version it made:
    ``sign`` +1 booked, -1 released, 0 the reservable rate changed (no
    booking). A process whose index of a link is at version ``v`` applies
    the rows above ``v`` instead of reloading the link's whole bookings."""

    __tablename__ = "booking_log"
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    link_id: Mapped[str] = mapped_column(String(200))
    version: Mapped[int] = mapped_column(BigInteger)
    sign: Mapped[int] = mapped_column(Integer)
    profile: Mapped[list] = mapped_column(JSON)
    end_ns: Mapped[int] = mapped_column(BigInteger)

    __table_args__ = (Index("ix_booking_log_link_version", "link_id", "version"),)


class Event(Base):
    __tablename__ = "events"
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    reservation_id: Mapped[int] = mapped_column(ForeignKey("reservations.id"), index=True)
    action: Mapped[str] = mapped_column(String(20))
    who: Mapped[str] = mapped_column(String(200))
    at_ns: Mapped[int] = mapped_column(BigInteger)
    old_state: Mapped[str | None] = mapped_column(String(20), nullable=True)
    new_state: Mapped[str] = mapped_column(String(20))
    old_version: Mapped[int | None] = mapped_column(Integer, nullable=True)
    new_version: Mapped[int] = mapped_column(Integer)
    detail: Mapped[dict | None] = mapped_column(JSON, nullable=True)


class Token(Base):
    __tablename__ = "tokens"
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    name: Mapped[str] = mapped_column(String(200))
    role: Mapped[str] = mapped_column(String(20))
    sha256: Mapped[str] = mapped_column(String(64), unique=True)
    created_ns: Mapped[int] = mapped_column(BigInteger)
    revoked_ns: Mapped[int | None] = mapped_column(BigInteger, nullable=True)


class Audit(Base):
    """An admin's change, outside any reservation: ``action`` ``link_share``
    (``target`` the link id, ``old``/``new`` ``{reservable_bps, reservable_share}``),
    ``token_create`` (the token's id; ``new`` its name and role) or
    ``token_revoke`` (``old``/``new`` ``{revoked}``)."""

    __tablename__ = "audit"
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    action: Mapped[str] = mapped_column(String(20))
    who: Mapped[str] = mapped_column(String(200))
    at_ns: Mapped[int] = mapped_column(BigInteger)
    target: Mapped[str] = mapped_column(String(200))
    old: Mapped[dict | None] = mapped_column(JSON, nullable=True)
    new: Mapped[dict | None] = mapped_column(JSON, nullable=True)
