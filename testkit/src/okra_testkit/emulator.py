"""A moto server in a child process: okra's stand-in for AWS in tests and the
demo. okra talks to it over HTTP exactly as it would to LocalStack or AWS."""

from __future__ import annotations

import base64
import json
import os
import shutil
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

from okra_controllers.aws.config import AwsConfig
from okra_testkit.eksauth import AwsPrincipal
from okra_testkit.envtest.process import Lifecycle, Process, free_port, wait_until

_ATTEMPTS = 3


def _moto_server_argv() -> list[str]:
    exe = Path(sys.executable).with_name("moto_server")
    if exe.exists():
        return [str(exe)]
    found = shutil.which("moto_server")
    if found:
        return [found]
    raise FileNotFoundError("moto_server not found; install okra-testkit: pip install ./testkit")


@dataclass
class MotoServer(Lifecycle):
    """Start with `with MotoServer() as aws:`; `aws.config` is an AwsConfig for it."""

    region: str = "us-east-1"
    base_dir: str | None = None
    host: str = "127.0.0.1"
    """The address it listens on (a node's address, for okra-manager in a Pod)."""
    port: int = field(init=False, default=0)
    dir: Path = field(init=False, default=Path())
    _proc: Process | None = field(init=False, default=None)

    @property
    def endpoint_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def config(self) -> AwsConfig:
        return AwsConfig(
            region=self.region,
            endpoint_url=self.endpoint_url,
            access_key_id="testing",
            secret_access_key="testing",
        )

    def start(self) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="okra-moto-", dir=self.base_dir))
        env = {
            **os.environ,
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_DEFAULT_REGION": self.region,
            "MOTO_ALLOW_NONEXISTENT_REGION": "true",
        }
        last: Exception | None = None
        for _ in range(_ATTEMPTS):
            self.port = free_port()
            proc = Process(
                "moto_server",
                [*_moto_server_argv(), "-H", self.host, "-p", str(self.port)],
                self.dir / "moto.log",
                env=env,
            )
            proc.start()
            try:
                wait_until(self._ready, 30, "moto_server", alive=proc)
                self._proc = proc
                return
            except (RuntimeError, TimeoutError) as e:
                last = e
                proc.stop()
        self.stop()
        raise RuntimeError(f"moto_server did not start: {last}")

    def stop(self) -> None:
        if self._proc is not None:
            self._proc.stop()
            self._proc = None
        if self.dir != Path() and self.dir.exists():
            shutil.rmtree(self.dir, ignore_errors=True)

    def reset(self) -> None:
        """Forget every AWS resource (moto's reset API)."""
        req = urllib.request.Request(f"{self.endpoint_url}/moto-api/reset", method="POST")
        with urllib.request.urlopen(req, timeout=10):
            pass

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc else None

    def _ready(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.endpoint_url}/moto-api/", timeout=2):
                return True
        except (urllib.error.URLError, OSError):
            return False


EMULATOR_ARN = "arn:aws:sts::123456789012:user/moto"
"""What moto's STS GetCallerIdentity answers for MotoServer's static keys."""


def emulator_principal() -> AwsPrincipal:
    """MotoServer's static keys as an EKS token verifier knows them."""
    return AwsPrincipal("testing", "testing", EMULATOR_ARN)


class CountingProxy:
    """An HTTP proxy in front of an AWS endpoint that records each call's action
    (`DescribeRules`, `ModifyRule`, ...), so tests and benchmarks can count what a
    process that is not ours to instrument sends to AWS.

    It is also the bridge from moto's EKS to local control planes: for a cluster named with
    `route_eks_cluster`, EKS DescribeCluster answers carry the local API server's URL and CA
    in `cluster.endpoint` and `cluster.certificateAuthority.data` (moto's are fake hostnames);
    every other byte passes through unchanged. And it tells `on_credentials` of each set of
    temporary credentials STS AssumeRole hands out, so that an EKS token verifier can check
    signatures made with them (as STS itself knows the credentials it issued)."""

    def __init__(
        self, target: str, on_credentials: Callable[[AwsPrincipal], None] | None = None
    ) -> None:
        self.target = target.rstrip("/")
        self.calls: list[tuple[float, str]] = []  # (monotonic time, action)
        self.keep_bodies: set[str] = set()  # actions whose requests are kept whole, in...
        self.bodies: list[tuple[float, str, bytes]] = []  # ...(time, action, body), in order
        self.port = 0
        self.on_credentials = on_credentials
        self._eks: dict[str, tuple[str, str]] = {}
        self._runner: Any = None
        self._session: Any = None

    def route_eks_cluster(self, name: str, server: str, ca_pem: bytes) -> None:
        """Answer DescribeCluster of `name` with this API server URL and PEM CA."""
        self._eks[name] = (server, base64.b64encode(ca_pem).decode())

    def unroute_eks_cluster(self, name: str) -> None:
        self._eks.pop(name, None)

    @property
    def endpoint_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def actions(self, since: float = 0.0) -> list[str]:
        return [a for t, a in self.calls if t >= since]

    def sent(self, action: str, since: float = 0.0) -> list[tuple[float, bytes]]:
        """(monotonic time, body) of each `action` request (one of `keep_bodies`) forwarded
        since `since`, in the order they arrived: what okra wrote, exactly and in order,
        where sampling AWS's reads can miss a state that lasts less than a poll."""
        return [(t, b) for t, a, b in self.bodies if a == action and t >= since]

    async def start(self) -> None:
        import aiohttp
        from aiohttp import web

        self._session = aiohttp.ClientSession(auto_decompress=False)
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_route("*", "/{tail:.*}", self._forward)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]

    async def stop(self) -> None:
        # The server first, so no request is still being forwarded when the
        # client session closes under it ("Connector is closed").
        if self._runner is not None:
            await self._runner.cleanup()
        if self._session is not None:
            await self._session.close()

    async def _forward(self, request: Any) -> Any:
        from aiohttp import web

        body = await request.read()
        eks_cluster = _eks_describe(request.method, request.path)
        action = action_of(request, body)
        self.calls.append((time.monotonic(), action))
        if action in self.keep_bodies:
            self.bodies.append((time.monotonic(), action, body))
        headers = {k: v for k, v in request.headers.items() if k.lower() not in ("host",)}
        async with self._session.request(
            request.method, self.target + request.path_qs, data=body, headers=headers
        ) as resp:
            payload = await resp.read()
            if resp.status == 200 and eks_cluster in self._eks:
                payload = self._rewrite_cluster(payload, *self._eks[eks_cluster])
            elif resp.status == 200 and action == "AssumeRole" and self.on_credentials:
                issued = _assumed_role_principal(payload)
                if issued is not None:
                    self.on_credentials(issued)
            out_headers = {
                k: v
                for k, v in resp.headers.items()
                if k.lower()
                not in ("content-length", "transfer-encoding", "content-encoding", "connection")
            }
            return web.Response(status=resp.status, body=payload, headers=out_headers)

    @staticmethod
    def _rewrite_cluster(payload: bytes, server: str, ca_data: str) -> bytes:
        doc = json.loads(payload)
        cluster = doc.get("cluster") or {}
        cluster["endpoint"] = server
        cluster["certificateAuthority"] = {"data": ca_data}
        return json.dumps(doc).encode()


def forward_weights(body: bytes) -> dict[str, int]:
    """Target group ARN -> weight of the forward action in an ELBv2 `ModifyRule` (or
    `CreateRule`, `ModifyListener`) request, as the AWS query protocol spells it
    (`Actions.member.N.ForwardConfig.TargetGroups.member.M.TargetGroupArn` / `.Weight`)."""
    form = urllib.parse.parse_qs(body.decode(), keep_blank_values=True)
    groups: dict[str, dict[str, str]] = {}
    for key, values in form.items():
        head, sep, field = key.rpartition(".")
        if (
            sep
            and ".ForwardConfig.TargetGroups.member." in head
            and field
            in (
                "TargetGroupArn",
                "Weight",
            )
        ):
            groups.setdefault(head, {})[field] = values[0]
    return {g["TargetGroupArn"]: int(g.get("Weight", "1")) for g in groups.values()}


def record_weights(body: bytes, name: str) -> dict[str, int | None]:
    """SetIdentifier -> weight of each weighted record of `name` a Route 53
    `ChangeResourceRecordSets` request changes: the weight it CREATEs or UPSERTs, or None
    where it DELETEs the record (`name` with or without its trailing dot)."""
    ns = {"r": "https://route53.amazonaws.com/doc/2013-04-01/"}
    out: dict[str, int | None] = {}
    for change in ElementTree.fromstring(body).iterfind(".//r:Change", ns):
        rrset = change.find("r:ResourceRecordSet", ns)
        if rrset is None or rrset.findtext("r:Name", "", ns).rstrip(".") != name.rstrip("."):
            continue
        ident = rrset.findtext("r:SetIdentifier", "", ns)
        weight = rrset.findtext("r:Weight", "", ns)
        if ident and weight:
            deleted = change.findtext("r:Action", "", ns) == "DELETE"
            out[ident] = None if deleted else int(weight)
    return out


def _eks_describe(method: str, path: str) -> str | None:
    """The cluster name of an EKS DescribeCluster call (`GET /clusters/<name>`), else None."""
    parts = path.split("/")
    if method == "GET" and len(parts) == 3 and parts[1] == "clusters" and parts[2]:
        return urllib.parse.unquote(parts[2])
    return None


def _assumed_role_principal(payload: bytes) -> AwsPrincipal | None:
    """The credentials and identity in an STS AssumeRole XML answer."""
    ns = "{https://sts.amazonaws.com/doc/2011-06-15/}"
    try:
        root = ElementTree.fromstring(payload)
    except ElementTree.ParseError:
        return None
    creds = root.find(f".//{ns}Credentials")
    user = root.find(f".//{ns}AssumedRoleUser/{ns}Arn")
    if creds is None or user is None or not user.text:
        return None
    values = {c.tag.removeprefix(ns): (c.text or "") for c in creds}
    if not values.get("AccessKeyId") or not values.get("SecretAccessKey"):
        return None
    return AwsPrincipal(
        values["AccessKeyId"],
        values["SecretAccessKey"],
        user.text,
        session_token=values.get("SessionToken") or None,
    )


def _route53_operation(method: str, path: str) -> str | None:
    """The Route 53 REST operation okra makes (or the test harness, creating zones), else
    None: `/2013-04-01/hostedzone/<id>/rrset` and `/2013-04-01/change/<id>`."""
    parts = path.strip("/").split("/")
    if len(parts) < 2 or parts[0] != "2013-04-01":
        return None
    if parts[1] == "hostedzone" and len(parts) == 4 and parts[3] == "rrset":
        return "ChangeResourceRecordSets" if method == "POST" else "ListResourceRecordSets"
    if parts[1] == "change" and len(parts) == 3 and method == "GET":
        return "GetChange"
    if parts[1] == "hostedzone" and len(parts) == 2:
        return "CreateHostedZone" if method == "POST" else "ListHostedZones"
    return None


def action_of(request: Any, body: bytes) -> str:
    """The AWS operation of a request: the JSON protocol's `X-Amz-Target`, the Smithy RPC
    v2 path's operation (CloudWatch's CBOR protocol), else the query protocol's `Action`
    (form body or query string), or EKS's REST DescribeCluster and
    ListClusters, or Route 53's REST operations; `?` when none."""
    route53 = _route53_operation(request.method, request.path)
    if route53 is not None:
        return route53
    if _eks_describe(request.method, request.path) is not None:
        return "DescribeCluster"
    if request.method == "GET" and request.path.rstrip("/") == "/clusters":
        return "ListClusters"
    action = str(request.headers.get("X-Amz-Target", "")).rpartition(".")[2]
    rpc = request.path.split("/")  # Smithy RPC v2 (CloudWatch): /service/<S>/operation/<Op>
    if not action and len(rpc) == 5 and rpc[1] == "service" and rpc[3] == "operation":
        action = rpc[4]
    if not action:
        form = urllib.parse.parse_qs(body.decode(errors="replace")) if body else {}
        action = (form.get("Action") or request.query.getall("Action", None) or ["?"])[0]
    return action
