"""okra_runtime: an asyncio controller runtime for Kubernetes operators.

It knows nothing of okra: another team can build its own operator on it. The
pieces follow controller-runtime's vocabulary (client, cache, workqueue,
controller, manager); `okra_runtime.envtest` starts a real local control plane
(kube-apiserver + etcd + kube-controller-manager) for tests and demos.
"""

__all__: list[str] = []
