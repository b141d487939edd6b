"""Metric analysis: templates, runs, providers, verdicts.

- `templates`, `args`, `validation`: AnalysisTemplates and ClusterAnalysisTemplates found and
  instantiated as AnalysisRuns, arguments resolved and substituted, a run's spec checked;
- `run_controller`: the AnalysisRun controller, around `run_pass` (one pass, pure) and
  `verdict` (Argo Rollouts' rules, pure);
- `check_controller`: the Check controller, a standing metric check on its own schedule;
- `providers/`: Prometheus, Datadog, CloudWatch and web, behind one interface; `measure`
  takes one measurement through one;
- `expr/`: the condition language of `successCondition` and `failureCondition`;
- `judge`, `shift`, `compare`: the canary judge, which compares the canary's samples of a
  metric with the stable version's;
- `duration`: Go duration strings.
"""
