"""EKS bearer tokens are presigned STS GetCallerIdentity URLs, as `aws eks get-token` makes them;
checked against a real moto STS endpoint over HTTP."""

from __future__ import annotations

import base64
from urllib.parse import parse_qs, urlsplit

from okra_controllers.clusters.connect import EKS_TOKEN_PREFIX, eks_token
from okra_testkit.emulator import MotoServer


def decode(token: str) -> str:
    body = token.removeprefix(EKS_TOKEN_PREFIX)
    return base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)).decode()


async def test_eks_token_is_a_presigned_get_caller_identity_url(moto: MotoServer) -> None:
    token = await eks_token(moto.config, "prod-1")
    assert token.startswith(EKS_TOKEN_PREFIX)
    body = token.removeprefix(EKS_TOKEN_PREFIX)
    assert "=" not in body
    assert "+" not in body
    assert "/" not in body
    url = decode(token)
    q = parse_qs(urlsplit(url).query)
    assert q["Action"] == ["GetCallerIdentity"]
    assert q["X-Amz-Expires"] == ["60"]
    assert "x-k8s-aws-id" in q["X-Amz-SignedHeaders"][0].split(";")
    assert url.startswith(moto.endpoint_url)

    assert q["X-Amz-Credential"][0].endswith("/us-east-1/sts/aws4_request")
    assert len(q["X-Amz-Signature"][0]) == 64
    # (moto's server routes by the Authorization header, not a presigned query, so it cannot
    # answer the URL itself; EKS's authenticator is what GETs it in production. test_eks_auth.py
    # has a workload apiserver verify the signature, as that authenticator and STS do.)


async def test_eks_token_with_a_role_signs_with_the_assumed_role(moto: MotoServer) -> None:
    token = await eks_token(moto.config, "prod-1", "arn:aws:iam::123456789012:role/okra")
    q = parse_qs(urlsplit(decode(token)).query)
    assert "X-Amz-Security-Token" in q  # temporary credentials from AssumeRole
    assert q["X-Amz-Credential"][0] != ""
