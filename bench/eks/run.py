"""bench/eks: what EKS authentication costs on a local workload cluster.

- `cluster`: seconds for `LocalEks.cluster()` (a control plane started with the token webhook,
  its RBAC binding, the EKS cluster created in moto, DescribeCluster pointed at it).
- `request`: latency of one authenticated GET on the workload apiserver with an EKS token:
  a new token each time (signed with a new access key, so kube-apiserver's token cache misses
  and the webhook verifies every one), and one token reused (as okra reuses its token for 10
  minutes: cached by kube-apiserver after the first); beside the anchor, the same GET with a
  static token (the apiserver's token file), all measured in the same run.
- `verify`: CPU time of one `EksTokenVerifier.verify` in-process.

    bench/eks/run.sh [--requests 200]
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import ssl
import statistics
import time

import aiohttp

from okra_controllers.clusters.connect import eks_token
from okra_testkit.eksauth import AwsPrincipal
from okra_testkit.emulator import EMULATOR_ARN, MotoServer
from okra_testkit.envtest import ControlPlane
from okra_testkit.localeks import LocalEks
from okra_testkit.seed import Seeder


async def get_latencies(plane: ControlPlane, tokens: list[str]) -> list[float]:
    ctx = ssl.create_default_context(cadata=plane.ca_pem.decode())
    out: list[float] = []
    async with aiohttp.ClientSession() as http:
        for token in tokens:
            start = time.perf_counter()
            async with http.get(
                f"{plane.server}/api/v1/namespaces/default",
                headers={"Authorization": f"Bearer {token}"},
                ssl=ctx,
            ) as resp:
                await resp.read()
                assert resp.status == 200, resp.status
            out.append(time.perf_counter() - start)
    return out


def ms(xs: list[float]) -> str:
    xs = sorted(xs)
    p95 = xs[int(0.95 * (len(xs) - 1))]
    return f"median {statistics.median(xs) * 1000:.2f} ms, p95 {p95 * 1000:.2f} ms"


async def main(requests: int) -> None:
    with MotoServer() as moto:
        async with LocalEks(moto, controller_manager=False) as eks:
            network = await Seeder(eks.config).network()
            start = time.perf_counter()
            plane = await eks.cluster("bench", network)
            print(f"cluster: LocalEks.cluster() {time.perf_counter() - start:.1f} s")
            assert eks.webhook is not None
            verifier = eks.webhook.verifier
            tokens = []
            for i in range(requests):
                key = f"AKIABENCH{i:06d}"
                verifier.add_principal(AwsPrincipal(key, "secret", EMULATOR_ARN))
                aws = dataclasses.replace(eks.config, access_key_id=key, secret_access_key="secret")
                tokens.append(await eks_token(aws, "bench"))
            reused = await eks_token(eks.config, "bench")
            await get_latencies(plane, [reused, plane.token()] * 5)  # warm up
            seen = len(eks.webhook.decisions)
            fresh = await get_latencies(plane, tokens)
            verified = len(eks.webhook.decisions) - seen
            cached = await get_latencies(plane, [reused] * requests)
            static = await get_latencies(plane, [plane.token()] * requests)
            print(f"request: new EKS token each time {ms(fresh)} ({verified} webhook calls)")
            print(f"request: one EKS token reused {ms(cached)}")
            print(f"request: static token (anchor) {ms(static)}")
            start = time.process_time()
            for t in tokens:
                verifier.verify(t, "bench")
            cpu = (time.process_time() - start) / len(tokens)
            print(f"verify: {cpu * 1e6:.0f} µs CPU per token")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=200)
    asyncio.run(main(parser.parse_args().requests))
