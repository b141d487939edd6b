"""okra's test harness, a distribution of its own (`okra-testkit`) so that nothing of it ships
in `okra` or its image.

- `envtest`: a real local control plane (etcd, kube-apiserver, kube-controller-manager,
  kubectl) and Argo CD on it (`envtest.argocd`);
- `emulator`: a moto server in a child process, and `CountingProxy` in front of it (counts
  AWS calls, and bridges moto's EKS clusters to local control planes);
- `seed`: creates what okra works on in an AWS account (VPC, load balancers, target groups,
  instances, tagged EKS clusters); `awsread`: what AWS shows of the traffic okra steers (an
  NLB listener's forward, a name's weighted records);
- `eksauth` and `localeks`: EKS clusters whose API servers are local control planes that
  accept EKS tokens;
- `scenario`, `demo`, `demo_fleet`: the standard scenario, `make demo` and `make demo-fleet`.

`okra_runtime` and `okra_controllers` never import this package (an import-linter contract).
"""
