"""Prometheus metrics of the runtime, named exactly as controller-runtime and
client-go name theirs, so existing dashboards and alerts work unchanged.

All of them live in one registry, `REGISTRY`, which the manager serves on
`/metrics`; applications add their own collectors to it. Metric names and
labels are a stable API: never rename one.
"""

from __future__ import annotations

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    PlatformCollector,
    ProcessCollector,
    disable_created_metrics,
)

# Counters and histograms without a `<name>_created` series beside each (controller-runtime
# has none; they double the series count for nothing a dashboard uses).
disable_created_metrics()  # type: ignore[no-untyped-call]
REGISTRY = CollectorRegistry(auto_describe=True)
ProcessCollector(registry=REGISTRY)  # process_cpu_seconds_total, process_resident_memory_bytes
PlatformCollector(registry=REGISTRY)  # python_info

_RECONCILE_BUCKETS = (
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.15,
    0.2,
    0.25,
    0.3,
    0.35,
    0.4,
    0.45,
    0.5,
    0.6,
    0.7,
    0.8,
    0.9,
    1.0,
    1.25,
    1.5,
    1.75,
    2.0,
    2.5,
    3.0,
    3.5,
    4.0,
    4.5,
    5,
    6,
    7,
    8,
    9,
    10,
    15,
    20,
    25,
    30,
    40,
    50,
    60,
)
_QUEUE_BUCKETS = tuple(10.0**e for e in range(-8, 2))  # 1e-8 .. 10 s, as client-go

# -- controller-runtime: pkg/internal/controller/metrics ----------------------
RECONCILE_TOTAL = Counter(
    "controller_runtime_reconcile_total",
    "Total number of reconciliations per controller",
    ["controller", "result"],  # result: success | error | requeue | requeue_after
    registry=REGISTRY,
)
RECONCILE_ERRORS = Counter(
    "controller_runtime_reconcile_errors_total",
    "Total number of reconciliation errors per controller",
    ["controller"],
    registry=REGISTRY,
)
TERMINAL_RECONCILE_ERRORS = Counter(
    "controller_runtime_terminal_reconcile_errors_total",
    "Total number of terminal reconciliation errors per controller",
    ["controller"],
    registry=REGISTRY,
)
RECONCILE_PANICS = Counter(
    "controller_runtime_reconcile_panics_total",
    "Total number of reconciliation panics per controller",
    ["controller"],
    registry=REGISTRY,
)
RECONCILE_TIME = Histogram(
    "controller_runtime_reconcile_time_seconds",
    "Length of time per reconciliation per controller",
    ["controller"],
    buckets=_RECONCILE_BUCKETS,
    registry=REGISTRY,
)
MAX_CONCURRENT_RECONCILES = Gauge(
    "controller_runtime_max_concurrent_reconciles",
    "Maximum number of concurrent reconciles per controller",
    ["controller"],
    registry=REGISTRY,
)
ACTIVE_WORKERS = Gauge(
    "controller_runtime_active_workers",
    "Number of currently used workers per controller",
    ["controller"],
    registry=REGISTRY,
)

# -- client-go: util/workqueue (labels as controller-runtime registers them) ----
WORKQUEUE_DEPTH = Gauge(
    "workqueue_depth", "Current depth of workqueue", ["controller", "name"], registry=REGISTRY
)
WORKQUEUE_ADDS = Counter(
    "workqueue_adds_total",
    "Total number of adds handled by workqueue",
    ["controller", "name"],
    registry=REGISTRY,
)
WORKQUEUE_QUEUE_DURATION = Histogram(
    "workqueue_queue_duration_seconds",
    "How long in seconds an item stays in workqueue before being requested",
    ["controller", "name"],
    buckets=_QUEUE_BUCKETS,
    registry=REGISTRY,
)
WORKQUEUE_WORK_DURATION = Histogram(
    "workqueue_work_duration_seconds",
    "How long in seconds processing an item from workqueue takes",
    ["controller", "name"],
    buckets=_QUEUE_BUCKETS,
    registry=REGISTRY,
)
WORKQUEUE_UNFINISHED_WORK = Gauge(
    "workqueue_unfinished_work_seconds",
    "How many seconds of work has been done that is in progress and hasn't been observed by "
    "work_duration. Large values indicate stuck threads.",
    ["controller", "name"],
    registry=REGISTRY,
)
WORKQUEUE_LONGEST_RUNNING = Gauge(
    "workqueue_longest_running_processor_seconds",
    "How many seconds has the longest running processor for workqueue been running.",
    ["controller", "name"],
    registry=REGISTRY,
)
WORKQUEUE_RETRIES = Counter(
    "workqueue_retries_total",
    "Total number of retries handled by workqueue",
    ["controller", "name"],
    registry=REGISTRY,
)

# -- priority (okra_runtime's own, documented in docs/runtime.md) ---------------
PRIORITY_HELD = Gauge(
    "okra_runtime_priority_held_queues",
    "Controllers whose new or failing objects wait while a change in progress goes first",
    registry=REGISTRY,
)

# -- read-your-writes (okra_runtime's own, documented in docs/runtime.md) ---------
STALE_CACHE_WAITS = Counter(
    "okra_runtime_stale_cache_waits_total",
    "Reconciles that waited for the cache to show this process's own last write first",
    ["controller"],
    registry=REGISTRY,
)

# -- informers (okra_runtime's own, documented in docs/runtime.md) --------------
WATCH_RESTARTS = Counter(
    "okra_runtime_watch_restarts_total",
    "Watches reopened, by reason (closed, error, stalled, expired)",
    ["group", "version", "kind", "reason"],
    registry=REGISTRY,
)
INFORMER_RELISTS = Counter(
    "okra_runtime_informer_relists_total",
    "Full relists performed by an informer",
    ["group", "version", "kind"],
    registry=REGISTRY,
)

# -- write loops (okra_runtime's own, documented in docs/runtime.md) --------------
HOT_LOOP_OBJECTS = Counter(
    "okra_runtime_hot_loop_objects_total",
    "Objects this process changed more than a few times a second for several seconds on "
    "end (a controller that never reaches a fixed point), each counted once per loop",
    ["group", "version", "kind"],
    registry=REGISTRY,
)

# -- leader election (client-go's name) --------------------------------------------
LEADER = Gauge(
    "leader_election_master_status",
    "1 while this process holds the leader election lease `name`, else 0",
    ["name"],
    registry=REGISTRY,
)
