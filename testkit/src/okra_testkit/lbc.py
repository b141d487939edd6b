"""The AWS Load Balancer Controller (`hack/build-lbc.sh`) as a process beside a control plane,
its AWS calls sent to an emulator (moto): it registers the Pods behind a TargetGroupBinding's
Service into the binding's target group, as it does in an EKS cluster.

It runs on the host with the plane's admin kubeconfig (not as a Pod: no registry serves its
image), one replica, leader election off; its webhooks serve a throwaway certificate and are
not registered with the API server, so a TargetGroupBinding is written complete (its
`targetType` set) rather than defaulted by the mutating webhook. Its CRDs (TargetGroupBinding,
IngressClassParams, ALBTargetControlConfig) are applied to the plane on start. The Service and
Gateway controllers are switched off (`--feature-gates`): only TargetGroupBindings (and the
Ingress controller, which always runs) are watched.
"""

from __future__ import annotations

import os
import tempfile
import urllib.error
import urllib.request
from pathlib import Path

from okra_controllers.aws.config import AwsConfig
from okra_testkit.envtest import ControlPlane
from okra_testkit.envtest.binaries import cached_build
from okra_testkit.envtest.certs import make_pki
from okra_testkit.envtest.process import Process, Processes

LBC_ENV = "OKRA_LBC"
BINARY = "aws-load-balancer-controller"
SERVICE_IDS = ("EC2", "Elastic Load Balancing v2", "STS")
"""The AWS SDK service IDs whose endpoints `--aws-api-endpoints` points at the emulator: the
controller calls EC2 (the VPC's CIDRs) and ELBv2 (targets) for a TargetGroupBinding."""
FEATURE_GATES = (
    "EnableServiceController=false",
    "NLBGatewayAPI=false",
    "ALBGatewayAPI=false",
    "GatewayListenerSet=false",
)


class LoadBalancerControllerUnavailableError(RuntimeError):
    """The controller's binary is not built (the message says how to build it)."""


def lbc_binary(path: str | os.PathLike[str] | None = None) -> Path:
    """The controller's binary: `path`, else `$OKRA_LBC`, else the newest build in okra's
    cache directory."""
    if path is None:
        path = os.environ.get(LBC_ENV)
    if path is not None:
        return Path(path)
    build = cached_build((BINARY,), "lbc-*")
    if build is None:
        raise LoadBalancerControllerUnavailableError(
            f"the AWS Load Balancer Controller is not built: run `hack/build-lbc.sh` and set "
            f"{LBC_ENV} to the path it prints"
        )
    return build / BINARY


def lbc_crds(binary: Path) -> Path:
    """The directory of the controller's CRDs, which `hack/build-lbc.sh` puts beside it."""
    return binary.parent / "crds"


class LoadBalancerController(Processes):
    """`with LoadBalancerController(cp, aws, vpc_id):` runs the controller against `cp`, with
    `aws`'s endpoint and credentials, for the VPC `vpc_id` (Pod IPs inside its CIDR are
    registered without an availability zone, as on EKS with the VPC CNI)."""

    def __init__(
        self,
        cp: ControlPlane,
        aws: AwsConfig,
        vpc_id: str,
        *,
        cluster_name: str = "okra-node",
        binary: str | os.PathLike[str] | None = None,
        keep_dir: bool = False,
    ) -> None:
        self.cp, self.aws, self.vpc_id, self.cluster_name = cp, aws, vpc_id, cluster_name
        self.binary = lbc_binary(binary)
        self.keep_dir = keep_dir
        self.dir = Path()
        self._procs: list[Process] = []

    @property
    def proc(self) -> Process:
        return self.process("lbc")

    def log(self) -> str:
        """What the controller has logged so far."""
        try:
            return self.proc.log_path.read_text(errors="replace")
        except (KeyError, OSError):
            return ""

    def argv(self, metrics: int, health: int, webhook: int) -> list[str]:
        assert self.aws.endpoint_url, "the controller is pointed at an emulator's endpoint"
        endpoints = ",".join(f"{s}={self.aws.endpoint_url}" for s in SERVICE_IDS)
        return [
            str(self.binary),
            f"--kubeconfig={self.cp.kubeconfig()}",
            f"--cluster-name={self.cluster_name}",
            f"--aws-region={self.aws.region}",
            f"--aws-vpc-id={self.vpc_id}",
            f"--aws-api-endpoints={endpoints}",
            "--aws-max-retries=3",
            "--enable-leader-election=false",
            f"--metrics-bind-addr=127.0.0.1:{metrics}",
            f"--health-probe-bind-addr=127.0.0.1:{health}",
            f"--webhook-bind-port={webhook}",
            f"--webhook-cert-dir={self.dir / 'certs'}",
            f"--feature-gates={','.join(FEATURE_GATES)}",
        ]

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
        return {
            **env,
            "AWS_ACCESS_KEY_ID": self.aws.access_key_id or "testing",
            "AWS_SECRET_ACCESS_KEY": self.aws.secret_access_key or "testing",
            "AWS_REGION": self.aws.region,
            "AWS_EC2_METADATA_DISABLED": "true",
        }

    def start(self) -> None:
        if not os.access(self.binary, os.X_OK):
            raise LoadBalancerControllerUnavailableError(
                f"{self.binary} is not an executable: run `hack/build-lbc.sh`"
            )
        self.dir = Path(tempfile.mkdtemp(prefix="okra-lbc-"))
        try:
            certs = self.dir / "certs"
            certs.mkdir()
            pki = make_pki(("127.0.0.1", "localhost"))
            (certs / "tls.crt").write_bytes(pki.serving_cert_pem)
            (certs / "tls.key").write_bytes(pki.serving_key_pem)
            self.cp.install_crds([lbc_crds(self.binary)])
            self._start_on_free_ports(
                "lbc",
                self.argv,
                lambda _m, health, _w: lambda: _ok(f"http://127.0.0.1:{health}/readyz"),
                timeout=60,
                ports=3,
                env=self.env(),
            )
        except BaseException:
            self.stop()
            raise


def _ok(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as r:
            return bool(r.status == 200)
    except (urllib.error.URLError, OSError):
        return False
