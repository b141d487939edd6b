"""Seed an AWS account (moto, LocalStack or a sandbox) with what okra works on:
a VPC with subnets, an ALB and an NLB with listeners, tagged target groups,
EC2 instances and tagged EKS clusters. Used by tests and `okra demo`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from okra_controllers.aws.config import AwsConfig


@dataclass(frozen=True)
class Network:
    vpc_id: str
    subnet_ids: tuple[str, ...]


@dataclass(frozen=True)
class LoadBalancer:
    arn: str
    dns_name: str
    listener_arn: str


def _tags(tags: dict[str, str] | None) -> list[dict[str, str]]:
    return [{"Key": k, "Value": v} for k, v in (tags or {}).items()]


class Seeder:
    """Creates resources and returns their identifiers. Every call is one or a
    few AWS API calls through aiobotocore against `config`."""

    def __init__(self, config: AwsConfig) -> None:
        self.config = config

    async def network(self, cidr: str = "10.0.0.0/16", zones: int = 2) -> Network:
        async with self.config.client("ec2") as ec2:
            vpc = (await ec2.create_vpc(CidrBlock=cidr))["Vpc"]["VpcId"]
            azs = (await ec2.describe_availability_zones())["AvailabilityZones"]
            prefix = ".".join(cidr.split(".")[:2])
            subnets = []
            for i in range(zones):
                sn = await ec2.create_subnet(
                    VpcId=vpc,
                    CidrBlock=f"{prefix}.{i}.0/24",
                    AvailabilityZone=azs[i % len(azs)]["ZoneName"],
                )
                subnets.append(sn["Subnet"]["SubnetId"])
        return Network(vpc, tuple(subnets))

    async def alb(self, name: str, network: Network, port: int = 80) -> LoadBalancer:
        """An internet-facing ALB with an HTTP listener whose default action is a
        fixed 404, so that okra's rules are the only forwards."""
        async with self.config.client("elbv2") as elb:
            lb = (
                await elb.create_load_balancer(
                    Name=name,
                    Subnets=list(network.subnet_ids),
                    Type="application",
                    Scheme="internet-facing",
                )
            )["LoadBalancers"][0]
            listener = (
                await elb.create_listener(
                    LoadBalancerArn=lb["LoadBalancerArn"],
                    Protocol="HTTP",
                    Port=port,
                    DefaultActions=[
                        {
                            "Type": "fixed-response",
                            "FixedResponseConfig": {
                                "StatusCode": "404",
                                "ContentType": "text/plain",
                                "MessageBody": "no route",
                            },
                        }
                    ],
                )
            )["Listeners"][0]
        return LoadBalancer(lb["LoadBalancerArn"], lb["DNSName"], listener["ListenerArn"])

    async def nlb(
        self, name: str, network: Network, default_target_group_arn: str, port: int = 80
    ) -> LoadBalancer:
        """An NLB with a TCP listener forwarding to `default_target_group_arn`
        (an NLB listener's default action must be a forward)."""
        async with self.config.client("elbv2") as elb:
            lb = (
                await elb.create_load_balancer(
                    Name=name,
                    Subnets=list(network.subnet_ids),
                    Type="network",
                )
            )["LoadBalancers"][0]
            listener = (
                await elb.create_listener(
                    LoadBalancerArn=lb["LoadBalancerArn"],
                    Protocol="TCP",
                    Port=port,
                    DefaultActions=[
                        {"Type": "forward", "TargetGroupArn": default_target_group_arn}
                    ],
                )
            )["Listeners"][0]
        return LoadBalancer(lb["LoadBalancerArn"], lb["DNSName"], listener["ListenerArn"])

    async def target_group(
        self,
        name: str,
        network: Network,
        *,
        protocol: str = "HTTP",
        port: int = 80,
        target_type: str = "instance",
        tags: dict[str, str] | None = None,
    ) -> str:
        async with self.config.client("elbv2") as elb:
            kwargs: dict[str, Any] = {
                "Name": name,
                "Protocol": protocol,
                "Port": port,
                "VpcId": network.vpc_id,
                "TargetType": target_type,
            }
            if tags:
                kwargs["Tags"] = _tags(tags)
            tg = (await elb.create_target_group(**kwargs))["TargetGroups"][0]
        return str(tg["TargetGroupArn"])

    async def instances(
        self, count: int, network: Network, tags: dict[str, str] | None = None
    ) -> list[str]:
        async with self.config.client("ec2") as ec2:
            kwargs: dict[str, Any] = {
                "ImageId": "ami-12c6146b",
                "MinCount": count,
                "MaxCount": count,
                "InstanceType": "t3.micro",
                "SubnetId": network.subnet_ids[0],
            }
            if tags:
                kwargs["TagSpecifications"] = [{"ResourceType": "instance", "Tags": _tags(tags)}]
            out = await ec2.run_instances(**kwargs)
        return [i["InstanceId"] for i in out["Instances"]]

    async def register_targets(
        self, target_group_arn: str, ids: list[str], port: int | None = None
    ) -> None:
        async with self.config.client("elbv2") as elb:
            targets = [{"Id": i, **({"Port": port} if port else {})} for i in ids]
            await elb.register_targets(TargetGroupArn=target_group_arn, Targets=targets)

    async def eks_cluster(
        self,
        name: str,
        network: Network,
        *,
        version: str = "1.34",
        tags: dict[str, str] | None = None,
    ) -> dict[str, Any]:
        async with self.config.client("eks") as eks:
            kwargs: dict[str, Any] = {
                "name": name,
                "version": version,
                "roleArn": "arn:aws:iam::123456789012:role/eks-cluster",
                "resourcesVpcConfig": {"subnetIds": list(network.subnet_ids)},
            }
            if tags:
                kwargs["tags"] = tags
            cluster: dict[str, Any] = (await eks.create_cluster(**kwargs))["cluster"]
        return cluster
