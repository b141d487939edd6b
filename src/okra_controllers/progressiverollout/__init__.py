"""ProgressiveRollout: an ApplicationSet's Applications synced cluster by cluster, in stages,
gated by health, bake time, analysis and webhooks (plan: the pure rules; controller: observe,
act, report)."""
