"""Reaching workload clusters: Argo CD cluster Secrets parsed and turned into cached clients.

`connect` reads a cluster Secret (`name`, `server`, `config`: a bearer token, TLS settings, or
`awsAuthConfig` for an EKS token okra signs itself, as `aws eks get-token` does) and keeps one
`Client` per Secret, rebuilt when the Secret changes. The AWSTargetGroupSet,
AWSTargetGroupBinding, ProgressiveRollout and system Cell controllers look into workload
clusters through it.
"""
