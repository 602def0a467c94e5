"""Provisioning: render the α prefix table and a QoS policy into router and
host configuration, so that a policy simulated with ``alphaqos run`` can be
deployed (Yan et al., CTRQ 2013, Section II: the prefixes of α flows
"configure firewall filter rules at ingress routers"; Section III: two
queues, α and everything else, no policing).

What it renders
    :mod:`.model` turns the inputs into a :class:`~.model.Plan`: the α
    source and destination prefixes (with their aging), the classes with
    their share of the link, priority, buffer and drop profile, and the
    filter terms (the policy's, then the α term). One module per target
    renders a plan as text:

    - :mod:`.junos`: Junos ``set`` commands (``load set``);
    - :mod:`.cisco`: Cisco IOS MQC (an input policy-map classifies and
      polices, setting a qos-group; an output policy-map queues), every
      object versioned so nothing attached is replaced;
    - :mod:`.tc`: a shell script building a Linux HTB tree with u32
      filters and police steps;
    - :mod:`.nftables`: an ``nft -f`` file with the α prefix sets, aging
      out by per-element timeouts, and rules setting ``meta priority`` to
      the HTB classes, metering policers with ``limit rate over``;
    - :mod:`.dtn`: host shaping for a data transfer node (Zurawski 2013).

    A policy element a target cannot express is an error (exit status 2,
    nothing written) unless ``--allow-partial``; then the file lists what
    it leaves out. :mod:`.check` checks the Junos and Cisco files'
    structure and references.

Writing the files: :mod:`.write`; the command (``alphaqos provision``):
:mod:`alphaqos.cli.provision`. Tests: ``tests/test_provision.py``.
"""
