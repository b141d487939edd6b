"""Metric providers behind one interface (`base.Provider`): Prometheus, Datadog, CloudWatch
and web, each measuring exactly as Argo Rollouts' provider of the same name does."""
