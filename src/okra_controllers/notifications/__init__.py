"""Notifications: rollout events of Cells and ProgressiveRollouts sent to webhooks
(generic JSON, Slack format).

An object subscribes with annotations, as Argo Rollouts' notifications do:

    notifications.okra.mumo.co/subscribe.<trigger>.<service>: "<recipient>"

Triggers: on-rollout-started, on-rollout-step-completed, on-rollout-paused,
on-analysis-inconclusive, on-rollout-aborted, on-rollout-failed,
on-rollout-completed, and for a Cell on-drift-repaired (its listener rule changed
outside okra and restored) (`all` subscribes to every one). Services are defined in
the ConfigMap `okra-notifications` of the object's namespace:

    service.webhook.<name>: |
      url: https://ci.example.com/hooks/okra     # or $key: a key of Secret okra-notifications
      headers: [{name: Authorization, value: $ci-token}]
      body: '{"text": "{{name}} {{trigger}}: {{message}}"}'   # optional; default: every field
    service.slack.<name>: |
      url: $slack-webhook-url                    # a Slack incoming webhook

`triggers` (pure) decides what happened from the status before and after a
reconcile and the plan's events; `outbox` records the notifications in the status
written with that change; `Notifier` delivers them in the background (the reconcile
never waits), retrying with backoff until the receiver accepts, then removes them:
at least once, across manager restarts.
"""
