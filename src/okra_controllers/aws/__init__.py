"""AWS access for okra: one client factory (`AwsConfig`) that speaks to real
AWS, LocalStack or a moto server alike, optionally as an assumed role (`assume`, which
asks its base config for an STS client through `clients.ClientMaker`), and the calls okra
makes with it (`elbv2`, `eks`, `route53`), how it says AWS's errors (`errors`) and shares
recent answers (`recent`).
The moto harness and the seed helpers that tests and the demo use are in the
okra-testkit distribution (`okra_testkit.emulator`, `okra_testkit.seed`)."""

from okra_controllers.aws.config import AwsConfig

__all__ = ["AwsConfig"]
