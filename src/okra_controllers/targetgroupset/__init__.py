"""The AWSTargetGroupSet controller: TargetGroupBindings of many clusters → AWSTargetGroups.

`plan` is the pure part: from what each generator found (Argo CD clusters, EKS clusters,
target groups by their AWS tags) to the AWSTargetGroups, and AWSTargetGroupBindings from
`bindingTemplate`, that should exist. `controller` observes the clusters (through
`okra_controllers.clusters`) and AWS, applies the plan and reports in the set's status.
"""
