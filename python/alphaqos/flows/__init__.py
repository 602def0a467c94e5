"""α-flow identification from router flow records (the first source
document's HNTES: Yan, Veeraraghavan, Tracy, Guok, CTRQ 2013, Section II).

Flow records from any source (NetFlow v5/v9, IPFIX, nfdump CSV, GoFlow2
JSON lines, generic CSV or Parquet) become one canonical table
(:mod:`.schema`); identification spreads each record's bytes over fixed
intervals, calls a flow α when it moves more than H bytes in one interval,
and learns the address prefixes of α sources and sinks; a backtest replays
the data day by day.

The subcommands of ``alphaqos flows`` (their parsers: :mod:`alphaqos.cli.flows`)
call :mod:`.collect`, :mod:`.ingest`, :mod:`.identify` and :mod:`.backtest`.
"""
