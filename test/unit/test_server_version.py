"""What okra-manager reads of the API server's version, and which it calls unsupported."""

from __future__ import annotations

import pytest

from okra_controllers.serverversion import OLDEST_SUPPORTED, ServerVersion, parse_version


@pytest.mark.parametrize(
    ("body", "minor"),
    [
        ({"major": "1", "minor": "34", "gitVersion": "v1.34.4"}, (1, 34)),
        ({"major": "1", "minor": "32+", "gitVersion": "v1.32.9-eks-1b3e656"}, (1, 32)),
        ({"gitVersion": "v1.31.2"}, (1, 31)),  # no major/minor: read from gitVersion
        ({"major": "", "minor": "", "gitVersion": "v1.36.0-rc.1"}, (1, 36)),
        ({"gitVersion": "weird"}, None),
        ({}, None),
        ("not json", None),
    ],
)
def test_the_minor_is_read_from_what_the_server_says(body: object, minor: object) -> None:
    assert parse_version(body).minor == minor


def test_only_a_minor_below_the_oldest_supported_is_called_unsupported() -> None:
    assert OLDEST_SUPPORTED == (1, 32)
    assert ServerVersion("v1.32.0", (1, 32)).unsupported is None
    assert ServerVersion("v1.37.1", (1, 37)).unsupported is None
    assert ServerVersion("unknown", None).unsupported is None  # not known: not refused
    why = ServerVersion("v1.31.14-eks-x", (1, 31)).unsupported
    assert why == (
        "Kubernetes v1.31.14-eks-x is older than 1.32, the oldest minor okra supports: "
        "its CRDs, server-side apply or watches may not behave as okra needs"
    )
