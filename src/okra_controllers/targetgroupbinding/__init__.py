"""The AWSTargetGroupBinding controller: IPs, instances and the nodes of many clusters → one
AWS target group."""
