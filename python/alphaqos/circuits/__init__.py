"""alphaqos circuits: an advance-reservation service that books bandwidth exactly.

See ``docs/circuits.md``. :mod:`.topology` reads the network from a scenario.
"""
