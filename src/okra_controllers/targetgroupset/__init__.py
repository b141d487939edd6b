"""The AWSTargetGroupSet controller: TargetGroupBindings of many clusters → AWSTargetGroups."""
