"""Suite-wide set-up: which tests run alone.

``make test`` runs the suite in two passes: everything not marked
``serial`` on two pytest-xdist workers, then the ``serial`` tests one at a
time. A module is serial when its tests measure real time (the emulator,
host shaping, a signal's delivery, a collector's loss at a rate) or create
network namespaces and veths, which two workers must not do at once: a
loaded CPU beside them changes what they measure."""

from __future__ import annotations

import pytest

SERIAL_MODULES = {
    "test_capture",
    "test_circuits_southbound",
    "test_circuits_web",
    "test_emulate",
    "test_flows_exporter",
    "test_flows_netflow",
    "test_provision",
    "test_provision_scripts",
    "test_provision_targets",
    "test_readme_commands",
    "test_reproduce_zurawski",
    "test_run_output",
    "test_shape",
    "test_transfer_path",
}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if item.path.stem in SERIAL_MODULES:
            item.add_marker(pytest.mark.serial)
