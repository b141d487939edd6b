"""AWS access for okra: one client factory (`AwsConfig`) that speaks to real
AWS, LocalStack or a moto server alike, plus the moto harness and seed helpers
that tests and the demo use."""

from okra_controllers.aws.config import AwsConfig

__all__ = ["AwsConfig"]
