"""A backend's `roleARN`: okra's AWS calls made as an assumed role (moto's STS over HTTP).
The role's credentials are assumed once and shared by every client of the role, land in
the role's account, and are assumed again before they expire; a refusal to assume is said
without the role's ARN."""

from __future__ import annotations

import dataclasses
import datetime
from collections.abc import Iterator

import pytest
from botocore.exceptions import ClientError

from okra_controllers.aws import assume
from okra_controllers.lbconfig import role_refusal
from okra_testkit.emulator import MotoServer

ROLE = "arn:aws:iam::222222222222:role/okra-network"


@pytest.fixture(autouse=True)
def fresh_sessions() -> Iterator[None]:
    assume.forget_sessions()
    yield
    assume.forget_sessions()


async def test_a_role_is_assumed_once_in_its_account_and_again_before_it_expires(
    moto: MotoServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[str] = []
    base = dataclasses.replace(moto.config, on_call=calls.append)
    as_role = base.assuming(ROLE)
    assert "okra-network" not in repr(as_role)  # a role is never in what gets logged
    for _ in range(3):
        async with as_role.client("sts") as sts:
            me = await sts.get_caller_identity()
        assert me["Account"] == "222222222222"
        assert ":assumed-role/okra-network/" in me["Arn"]
    assert calls.count("sts:AssumeRole") == 1
    async with base.client("sts") as sts:  # the base config is still itself
        assert (await sts.get_caller_identity())["Account"] != "222222222222"

    # 50 minutes on (of the credentials' 60): refreshed before they expire.
    later = datetime.datetime.now(datetime.UTC) + datetime.timedelta(minutes=50)
    monkeypatch.setattr(assume, "_clock", lambda: later)
    async with as_role.client("sts") as sts:
        assert (await sts.get_caller_identity())["Account"] == "222222222222"
    assert calls.count("sts:AssumeRole") == 2


def test_a_refused_role_is_said_without_its_arn() -> None:
    e = ClientError(
        {
            "Error": {
                "Code": "AccessDenied",
                "Message": f"User: x is not authorized to perform: sts:AssumeRole on {ROLE}",
            }
        },
        "AssumeRole",
    )
    said = role_refusal(e, ROLE)
    assert said is not None
    assert said.startswith("cannot assume the role in spec.roleARN")
    assert "AccessDenied" in said
    assert ROLE not in said
    other = ClientError({"Error": {"Code": "AccessDenied", "Message": "no"}}, "ModifyRule")
    assert role_refusal(other, ROLE) is None
    assert role_refusal(e, None) is None
