"""Reaching workload clusters: Argo CD cluster Secrets parsed and turned into cached clients."""
