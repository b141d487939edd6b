"""The Cell controller: versions, canary steps, rollback; the Pause and system Cell
controllers beside it.

- `controller`: the Cell's reconcile, observe → plan → act → report; `observe` turns the
  objects into the plan's input (`Observed`), the same for `okra plan`; `reads` observes
  from the caches and plans again with the target health and traffic the plan asks for
  (the driver `okra plan` runs too); `plan/`, the pure plan, one module per phase
  (`canary`, `switch`, `checks`, `failure`, ...); `act` makes the plan's writes, with
  `blocklist` (the VersionBlocklist, read live while the cache lags this process's
  entries) and `configspec` (the load balancer config's spec); `report` the Events and
  metrics;
- `versions` groups target groups by version; `traffic` reads what each target group
  served (traffic confirmation); `argocd` and `checkjobs` are the Argo CD cluster Secret
  strategies and the Jobs of prechecks and postchecks; `mappers` say which Cells an
  AWSTargetGroup, Secret or Application event wakes; `simulate` is the rollout ahead that
  `okra plan` prints;
- `pause_controller`: Pauses, which end when they expire or `okra promote` cancels them;
- `system/`: the system Cell, several clusters and applications swapped as one, over one
  Cell per application.

The Cell writes the AWSApplicationLoadBalancerConfig, AWSNetworkLoadBalancerConfig or
AWSRoute53RecordSetConfig its traffic goes through and reads their status; it imports none
of the config controllers.
"""
