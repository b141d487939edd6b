"""EKS authentication on a real kube-apiserver: the workload plane sends bearer tokens to the
TokenReview webhook, which accepts an EKS token okra signs (presigned STS GetCallerIdentity,
x-k8s-aws-id signed) only for its own cluster, with a known secret, not altered, under 15 minutes
old. The tokens are made by okra's own `eks_token` and, for the ones that must be old, by
botocore's SigV4 query signer used offline."""

from __future__ import annotations

import datetime
import ssl

import aiohttp

from eks_tokens import SIGV4_TIMESTAMP, altered, offline_token, query_of, whoami
from okra_controllers.aws.config import AwsConfig
from okra_controllers.clusters.connect import eks_token
from okra_testkit.eksauth import ADMIN_GROUP, TokenReviewServer
from okra_testkit.emulator import EMULATOR_ARN
from okra_testkit.envtest import ControlPlane
from okra_testkit.localeks import LocalEks


async def test_a_token_okra_signs_is_accepted_as_the_iam_principal(
    local_eks: LocalEks, eks_plane: ControlPlane, eks_webhook: TokenReviewServer
) -> None:
    token = await eks_token(local_eks.config, eks_plane.name)
    status, review = await whoami(eks_plane, token)
    assert status == 201, review
    user = review["status"]["userInfo"]
    async with local_eks.config.client("sts") as sts:
        caller = await sts.get_caller_identity()
    assert user["username"] == caller["Arn"] == EMULATOR_ARN  # what STS says these keys are
    assert ADMIN_GROUP in user["groups"]
    assert eks_webhook.decisions[-1].authenticated
    assert eks_webhook.decisions[-1].cluster == eks_plane.name

    # The group is bound to cluster-admin in the workload cluster (RBAC), so the token can read.
    ctx = ssl.create_default_context(cadata=eks_plane.ca_pem.decode())
    async with (
        aiohttp.ClientSession() as http,
        http.get(
            f"{eks_plane.server}/api/v1/namespaces/kube-system",
            headers={"Authorization": f"Bearer {token}"},
            ssl=ctx,
        ) as resp,
    ):
        assert resp.status == 200


async def test_forged_wrong_cluster_wrong_key_and_expired_tokens_get_401(
    local_eks: LocalEks, eks_plane: ControlPlane, eks_webhook: TokenReviewServer
) -> None:
    aws = local_eks.config
    now = datetime.datetime.now(datetime.UTC)
    second = datetime.timedelta(seconds=1)
    good = offline_token(local_eks.endpoint_url, eks_plane.name, now)
    assert (await whoami(eks_plane, good))[0] == 201  # the offline signer agrees with the server

    wrong_secret = AwsConfig(
        region=aws.region,
        endpoint_url=aws.endpoint_url,
        access_key_id="testing",
        secret_access_key="not-the-secret",
    )
    unknown_key = AwsConfig(
        region=aws.region,
        endpoint_url=aws.endpoint_url,
        access_key_id="AKIANOTKNOWN",
        secret_access_key="testing",
    )
    sig = query_of(good)["X-Amz-Signature"]
    bad = {
        "another cluster": (await eks_token(aws, "some-other-cluster"), "signature does not match"),
        "wrong secret": (await eks_token(wrong_secret, eks_plane.name), "signature does not match"),
        "unknown key": (await eks_token(unknown_key, eks_plane.name), "unknown access key"),
        "expired": (
            offline_token(
                local_eks.endpoint_url, eks_plane.name, now - datetime.timedelta(minutes=16)
            ),
            "token expired",
        ),
        "date moved": (
            altered(good, **{"X-Amz-Date": (now + second).strftime(SIGV4_TIMESTAMP)}),
            "signature does not match",
        ),
        "signature flipped": (
            altered(good, **{"X-Amz-Signature": sig[::-1]}),
            "signature does not match",
        ),
        "another endpoint": (
            offline_token("http://127.0.0.1:1", eks_plane.name, now),
            "unexpected STS endpoint",
        ),
        "not an EKS token": ("k8s-aws-v1.bm90IGEgdXJs", "unexpected STS endpoint"),
        "Go SDK style, for another cluster": (
            offline_token(local_eks.endpoint_url, "other", now, empty_hash=True),
            "signature does not match",
        ),
    }
    for case, (token, reason) in bad.items():
        status, body = await whoami(eks_plane, token)
        assert status == 401, (case, body)
        last = eks_webhook.decisions[-1]
        assert (last.authenticated, last.cluster) == (False, eks_plane.name), case
        assert reason in last.detail, (case, last.detail)
    # Still fine afterwards: rejections are not cached as acceptances, or the reverse.
    assert (await whoami(eks_plane, await eks_token(aws, eks_plane.name)))[0] == 201


async def test_a_token_signed_with_assumed_role_credentials_is_that_role(
    local_eks: LocalEks, eks_plane: ControlPlane
) -> None:
    """okra's `awsAuthConfig.roleARN` path: AssumeRole through the proxy (which tells the
    verifier of the credentials STS issued), then a token signed with them."""
    role = "arn:aws:iam::123456789012:role/okra-deployer"
    token = await eks_token(local_eks.config, eks_plane.name, role)
    status, review = await whoami(eks_plane, token)
    assert status == 201, review
    assert review["status"]["userInfo"]["username"].startswith(
        "arn:aws:sts::123456789012:assumed-role/okra-deployer/"
    )
