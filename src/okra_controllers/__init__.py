"""okra: canary-deploy whole Kubernetes clusters behind AWS load balancers.

Controllers, API models and AWS integration, built on `okra_runtime`.
"""
