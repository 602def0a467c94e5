"""``alphaqos transfer``: move a file by its deadline over a reserved circuit
(issue 23), after the third source document (slides, "deadline-driven file
transfer over DiffServ AF networks").

The data path is native (``crates/alphaqos-xfer``, the ``alphaqos-xfer``
binary): a *base* TCP connection paced at the reserved rate and marked with
the reservation's DSCP, K-1 *additional* ones unpaced and marked as excess,
all taking blocks from one queue. This package is its front: the deadline
loop (:mod:`.loop`), the reservation service's client (:mod:`.circuit`)
and the sender and receiver they drive (:mod:`.mover`; the command line is
:mod:`alphaqos.cli.transfer`). ``docs/transfer.md`` is the user's
guide."""

from .loop import DeadlineLoop, needed_rate_bps

__all__ = ["DeadlineLoop", "needed_rate_bps"]
