"""AwsConfig(reuse_clients=True) hands out one client per service (and event loop) until it
ages out, then a new one, closing the old one only an age later; without it, every
`client()` is a client of its own. close_clients() closes what the loop made."""

from __future__ import annotations

import pytest

from okra_controllers.aws import config as awsconfig
from okra_controllers.aws.config import AwsConfig, close_clients

ENDPOINT = "http://127.0.0.1:9"  # never dialled: making a client does not connect


async def test_pooled_clients_are_reused_per_service_and_config() -> None:
    aws = AwsConfig(endpoint_url=ENDPOINT, reuse_clients=True)
    try:
        async with aws.client("elbv2") as a, aws.client("elbv2") as b, aws.client("ec2") as e:
            assert a is b
            assert e is not a
        other = AwsConfig(endpoint_url=ENDPOINT, region="eu-west-1", reuse_clients=True)
        async with other.client("elbv2") as c:
            assert c is not a
    finally:
        await close_clients()
    assert not [k for k in awsconfig._POOL if k[1] in ("elbv2", "ec2")]


async def test_without_reuse_every_call_makes_a_client() -> None:
    aws = AwsConfig(endpoint_url=ENDPOINT)
    async with aws.client("elbv2") as a, aws.client("elbv2") as b:
        assert a is not b


async def test_an_aged_client_is_replaced_and_closed_an_age_later(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    now = [1000.0]
    monkeypatch.setattr(awsconfig, "_clock", lambda: now[0])
    aws = AwsConfig(endpoint_url=ENDPOINT, reuse_clients=True)
    try:
        async with aws.client("elbv2") as first:
            pass
        now[0] += awsconfig.CLIENT_MAX_AGE
        async with aws.client("elbv2") as second:
            assert second is not first
        assert [r.client for r in awsconfig._RETIRED] == [first]  # still usable meanwhile
        now[0] += 2 * awsconfig.CLIENT_MAX_AGE
        async with aws.client("elbv2") as third:
            assert third is not second
        assert first not in [r.client for r in awsconfig._RETIRED]  # closed by now
        assert [r.client for r in awsconfig._RETIRED] == [second]
    finally:
        await close_clients()
    assert awsconfig._RETIRED == []
