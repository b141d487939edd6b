"""ClusterSet: EKS clusters discovered by tag, written as Argo CD cluster Secrets.

`plan` decides (pure), `controller` observes EKS and the API server and carries the plan out.
"""
