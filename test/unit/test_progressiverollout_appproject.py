"""Argo CD's AppProject rules (progressiverollout/plan/appproject.py), with Argo CD's own test
cases as tables (pkg/apis/application/v1alpha1/types_test.go of the pinned v3.6.1:
TestAppProject_IsDestinationPermitted, TestAppProject_IsNegatedDestinationPermitted,
TestSyncWindows_Active, TestSyncWindows_Matches[_AND_Operator], TestSyncWindows_CanSync,
TestSyncWindows_SyncOverrun), their "now" fixed to an instant."""

from __future__ import annotations

import datetime
from typing import Any

import pytest

from okra_controllers.progressiverollout.plan.appproject import (
    Destination,
    Project,
    SyncWindow,
    WindowError,
    can_sync,
    destination_permitted,
    glob_match,
    matching_windows,
    parse_project,
)

NOW = datetime.datetime(2026, 7, 15, 11, 30, tzinfo=datetime.UTC)
"""Argo CD's tests take the time of the run; here a summer day (New York at UTC-4)."""


def at(hour: int, minute: int = 0) -> datetime.datetime:
    return NOW.replace(hour=hour, minute=minute)


# -- destinations ------------------------------------------------------------------------

D = Destination
K8S = "https://kubernetes.default.svc"
EKS = "https://eks-cluster-endpoint.ap-southeast-1.eks.amazonaws.com"

PERMITTED: list[tuple[str, list[Destination], Destination, bool]] = [
    ("server and namespace match", [D(K8S, "", "default")], D(K8S, "", "default"), True),
    ("namespace does not match", [D(K8S, "", "default")], D(K8S, "", "kube-system"), False),
    (
        "server does not match",
        [D("https://my-cluster", "", "default")],
        D(K8S, "", "default"),
        False,
    ),
    ("wildcard namespace", [D(K8S, "", "*")], D(K8S, "", "kube-system"), True),
    ("wildcard server", [D("https://*.default.svc", "", "default")], D(K8S, "", "default"), True),
    (
        "wildcard server prefix",
        [D("https://team1-*", "", "default")],
        D("https://test2-dev-cluster", "", "default"),
        False,
    ),
    ("wildcard namespace with prefix", [D(K8S, "", "test-*")], D(K8S, "", "test-foo"), True),
    ("wildcard namespace without prefix", [D(K8S, "", "test-*")], D(K8S, "", "test"), False),
    ("wildcard server and namespace", [D("*", "", "*")], D(K8S, "", "test"), True),
    ("name", [D("", "test", "*")], D("", "test", "test"), True),
    ("different name", [D("", "test2", "*")], D("", "test", "test"), False),
    (
        "negated namespace with multiple values",
        [D(K8S, "host-cluster", "!{kube-system,argocd}"), D(EKS, "destination-cluster-01", "*")],
        D(EKS, "", "kube-system"),
        True,
    ),
]

NEGATED: list[tuple[list[Destination], Destination, bool]] = [
    ([D("!" + K8S, "", "default")], D(K8S, "", "default"), False),
    ([D(K8S, "", "!default")], D(K8S, "", "kube-system"), True),
    ([D("!https://my-cluster", "", "default")], D(K8S, "", "default"), True),
    ([D("!" + K8S, "", "*")], D(K8S, "", "kube-system"), False),
    ([D("!https://*.default.svc", "", "default")], D(K8S, "", "default"), False),
    ([D("!https://team1-*", "", "default")], D("https://test2-dev-cluster", "", "default"), True),
    ([D(K8S, "", "!test-*")], D(K8S, "", "test-foo"), False),
    ([D(K8S, "", "!test-*")], D(K8S, "", "test"), True),
    ([D("", "!test", "*")], D("", "test", "test"), False),
    ([D("", "!test2", "*")], D("", "test", "test"), True),
    ([D("*", "", "kube-system"), D("*", "", "!kube-system")], D(K8S, "", "kube-system"), False),
    ([D("*", "", "*"), D("*", "", "!kube-system")], D(K8S, "", "kube-system"), False),
    ([D(K8S, "", "*"), D("!" + K8S, "", "*")], D(K8S, "", "kube-system"), False),
    ([D("*", "", "*"), D("!" + K8S, "", "kube-system")], D(K8S, "", "kube-system"), False),
    (
        [D("*", "", "*"), D("!" + K8S, "", "kube-system"), D("*", "", "!kube-system")],
        D(K8S, "", "kube-system"),
        False,
    ),
    (
        [D("*", "", "*"), D("!" + K8S, "", "kube-system"), D("*", "", "!kube-system")],
        D(K8S, "", "default"),
        True,
    ),
    (
        [D("*", "", "*"), D("!" + K8S, "", "kube-system"), D("*", "", "!kube-system")],
        D("https://test-dev-cluster", "", "kube-system"),
        False,
    ),
    ([D("", "test", "*"), D("", "!test", "*")], D("", "test", "test"), False),
    (
        [D("*", "", "test"), D("!https://test-server", "", "other")],
        D("https://test-server", "", "test"),
        True,
    ),
    (
        [D("*", "", "*"), D("https://test-server", "", "!other")],
        D("https://other-test-server", "", "other"),
        True,
    ),
    ([D("", "*", "*"), D("", "!bad", "other")], D("", "bad", "test"), True),
    ([D("", "*", "*"), D("", "!bad", "test")], D("", "bad", "test"), False),
]


@pytest.mark.parametrize(("name", "allowed", "dest", "expected"), PERMITTED)
def test_destination_permitted_as_argo_cd(
    name: str, allowed: list[Destination], dest: Destination, expected: bool
) -> None:
    project = Project("p", destinations=tuple(allowed))
    assert destination_permitted(project, dest.server, dest.name, dest.namespace) is expected


@pytest.mark.parametrize(("allowed", "dest", "expected"), NEGATED)
def test_negated_destinations_as_argo_cd(
    allowed: list[Destination], dest: Destination, expected: bool
) -> None:
    project = Project("p", destinations=tuple(allowed))
    assert destination_permitted(project, dest.server, dest.name, dest.namespace) is expected


def test_a_project_without_destinations_permits_none() -> None:
    assert not destination_permitted(Project("p"), K8S, "in-cluster", "default")


def test_project_scoped_clusters_only_when_the_cluster_belongs_to_the_project() -> None:
    project = Project("team-a", destinations=(D("*", "*", "*"),), scoped_only=True)
    assert destination_permitted(project, K8S, "c", "web", cluster_project="team-a")
    assert not destination_permitted(project, K8S, "c", "web", cluster_project="team-b")
    assert not destination_permitted(project, K8S, "c", "web")


@pytest.mark.parametrize(
    ("pattern", "value", "expected"),
    [
        ("*", "", True),
        ("a?c", "abc", True),
        ("a?c", "ac", False),
        ("[a-c]x", "bx", True),
        ("[!a-c]x", "bx", False),
        ("{eu,us}-*", "us-east-1", True),
        ("{eu,us}-*", "ap-south-1", False),
        ("https://*", "https://a/b/c", True),  # no separators: * crosses '/'
        ("a\\*", "a*", True),
        ("a\\*", "ab", False),
        ("{unclosed", "{unclosed", False),  # a pattern Argo CD cannot compile matches nothing
        ("[", "[", False),
    ],
)
def test_globs_as_argo_cd_reads_them(pattern: str, value: str, expected: bool) -> None:
    assert glob_match(pattern, value) is expected


# -- sync windows: which are active ------------------------------------------------------


def window(kind: str, schedule: str, duration: str, tz: str = "", **kw: Any) -> SyncWindow:
    return SyncWindow(kind=kind, schedule=schedule, duration=duration, time_zone=tz, **kw)


TEN_FOURTEEN = [window("allow", "* 10 * * *", "2h"), window("allow", "* 14 * * *", "2h")]
NY = [
    window("allow", "* 10 * * *", "2h", "America/New_York"),
    window("allow", "* 14 * * *", "2h", "America/New_York"),
]
UTC_M4 = datetime.timezone(datetime.timedelta(hours=-4))

ACTIVE: list[tuple[str, list[SyncWindow], datetime.datetime, list[int]]] = [
    ("MatchFirst", TEN_FOURTEEN, at(11), [0]),
    ("MatchSecond", TEN_FOURTEEN, at(15), [1]),
    (
        "MatchBoth",
        [window("allow", "* 10 * * *", "3h"), window("allow", "* 11 * * *", "3h")],
        at(12),
        [0, 1],
    ),
    ("MatchNone", TEN_FOURTEEN, at(17), []),
    ("MatchFirst-NonUTC", TEN_FOURTEEN, at(11).astimezone(UTC_M4), [0]),
    ("MatchSecond-NonUTC", TEN_FOURTEEN, at(15).astimezone(UTC_M4), [1]),
    ("MatchNone-NonUTC", TEN_FOURTEEN, at(17).astimezone(UTC_M4), []),
    ("MatchFirst-TimeZoneSpecified", NY, at(16), [0]),
    ("MatchSecond-TimeZoneSpecified", NY, at(20), [1]),
    ("MatchNone-TimeZoneSpecified", NY, at(22), []),
    (
        "MatchFirst-PositiveTimeZoneSpecified",
        [
            window("allow", "* 8 * * *", "2h", "Asia/Dhaka"),
            window("allow", "* 12 * * *", "2h", "Asia/Dhaka"),
        ],
        at(3),
        [0],
    ),
]


@pytest.mark.parametrize(("name", "windows", "t", "active"), ACTIVE)
def test_active_windows_as_argo_cd(
    name: str, windows: list[SyncWindow], t: datetime.datetime, active: list[int]
) -> None:
    assert [i for i, w in enumerate(windows) if w.covering(t) is not None] == active


@pytest.mark.parametrize(
    ("schedule", "duration", "said"),
    [
        ("* 10 * * 7", "3h", "cannot parse schedule"),  # Argo CD's days of week are 0-6
        ("* 10 * * *", "3a", "cannot parse duration"),
        ("invalid-cron-schedule", "1h", "cannot parse schedule"),
        ("@daily", "1h", "cannot parse schedule"),
        ("* 10 * * *", "invalid-duration", "cannot parse duration"),
    ],
)
def test_a_window_argo_cd_cannot_read_is_an_error(schedule: str, duration: str, said: str) -> None:
    with pytest.raises(WindowError, match=said):
        window("allow", schedule, duration).covering(NOW)


def test_an_unknown_time_zone_is_read_as_utc_as_argo_cd_does() -> None:
    assert window("deny", "* 11 * * *", "1h", "Mars/Olympus").covering(NOW) is not None
    assert window("deny", "* 11 * * *", "1h", "UTC").covering(NOW) is not None


def test_a_window_of_no_duration_is_never_active() -> None:
    assert window("deny", "* * * * *", "0s").covering(NOW) is None


# -- sync windows: which are about an Application ----------------------------------------

# (applications, clusters, namespaces): Argo CD's test app is test-app, destination
# server cluster1, name clusterName, namespace default
MATCHES: list[tuple[str, list[str], list[str], list[str]]] = [
    ("MatchNamespace", [], [], ["default"]),
    ("MatchCluster", [], ["cluster1"], []),
    ("MatchClusterName", [], ["clusterName"], []),
    ("MatchAppName", ["test-app"], [], []),
    ("MatchAppNameAndNamespace", ["test-app"], [], ["default"]),
    ("MatchAppNameAndClusterName", ["test-app"], ["clusterName"], []),
    ("MatchNamespaceAndClusterName", [], ["clusterName"], ["default"]),
    ("MatchAppNameAndNamespaceAndClusterName", ["test-app"], ["clusterName"], ["default"]),
    ("MatchWildcardAppName", ["test-*"], [], []),
    ("MatchWildcardAppNameAndNamespace", ["test-*"], [], ["default"]),
    ("MatchWildcardAppNameAndWildcardClusterName", ["test-*"], ["clusterN*"], []),
]


@pytest.mark.parametrize("and_operator", [False, True])
@pytest.mark.parametrize(("name", "apps", "clusters", "namespaces"), MATCHES)
def test_windows_about_an_application_as_argo_cd(
    name: str, apps: list[str], clusters: list[str], namespaces: list[str], and_operator: bool
) -> None:
    w = window(
        "allow",
        "* * * * *",
        "1h",
        applications=tuple(apps),
        clusters=tuple(clusters),
        namespaces=tuple(namespaces),
        and_operator=and_operator,
    )
    assert matching_windows([w], "test-app", "cluster1", "clusterName", "default") == [w]


@pytest.mark.parametrize("and_operator", [False, True])
def test_a_window_naming_nothing_is_about_no_application(and_operator: bool) -> None:
    w = window("allow", "* * * * *", "1h", and_operator=and_operator)
    assert matching_windows([w], "test-app", "cluster1", "clusterName", "default") == []


@pytest.mark.parametrize(
    ("apps", "clusters", "namespaces", "with_or", "with_and"),
    [
        (["test-app"], [], ["public"], True, False),
        (["other"], [], ["default"], True, False),
        (["test-app"], ["cluster2"], [], True, False),
        ([], ["cluster2"], ["default"], True, False),
        (["other"], ["other"], ["other"], False, False),
    ],
)
def test_and_operator_wants_every_list_that_is_set(
    apps: list[str], clusters: list[str], namespaces: list[str], with_or: bool, with_and: bool
) -> None:
    for and_operator, expected in ((False, with_or), (True, with_and)):
        w = window(
            "deny",
            "* * * * *",
            "1h",
            applications=tuple(apps),
            clusters=tuple(clusters),
            namespaces=tuple(namespaces),
            and_operator=and_operator,
        )
        got = matching_windows([w], "test-app", "cluster1", "clusterName", "default")
        assert bool(got) is expected, (and_operator, got)


# -- sync windows: may a sync run --------------------------------------------------------


def active(kind: str, manual: bool) -> SyncWindow:
    return window(kind, "* * * * *", "1h", manual_sync=manual)


def inactive(kind: str, manual: bool) -> SyncWindow:
    return window(kind, f"0 {(NOW.hour + 10) % 24} * * *", "1h", manual_sync=manual)


# (windows, manual sync, allowed): TestSyncWindows_CanSync, in its order
CAN_SYNC: list[tuple[str, list[SyncWindow], bool, bool]] = [
    ("manual, inactive deny with manual", [inactive("deny", True)], True, True),
    ("manual, inactive deny without manual", [inactive("deny", False)], True, True),
    (
        "manual, inactive allows, one without manual",
        [inactive("allow", True), inactive("allow", False)],
        True,
        False,
    ),
    ("manual, active allow with manual", [active("allow", True)], True, True),
    ("manual, active allow without manual", [active("allow", False)], True, True),
    ("auto, active allow", [active("allow", False)], False, True),
    (
        "manual, active allow and inactive deny",
        [active("allow", False), inactive("deny", False)],
        True,
        True,
    ),
    (
        "auto, active allow and inactive deny",
        [active("allow", False), inactive("deny", False)],
        False,
        True,
    ),
    ("manual, inactive allow", [inactive("allow", False)], True, False),
    ("auto, inactive allow", [inactive("allow", False)], False, False),
    ("manual, inactive allow with manual", [inactive("allow", True)], True, True),
    ("auto, inactive allow with manual", [inactive("allow", True)], False, False),
    (
        "manual, inactive allow and inactive deny",
        [inactive("allow", False), inactive("deny", False)],
        True,
        False,
    ),
    (
        "auto, inactive allow and inactive deny",
        [inactive("allow", False), inactive("deny", False)],
        False,
        False,
    ),
    (
        "auto, active allow and inactive allow",
        [active("allow", False), inactive("allow", False)],
        False,
        True,
    ),
    ("manual, active deny", [active("deny", False)], True, False),
    ("auto, active deny", [active("deny", False)], False, False),
    ("manual, active deny with manual", [active("deny", True)], True, True),
    ("auto, active deny with manual", [active("deny", True)], False, False),
    (
        "manual, active denies, one without manual",
        [active("deny", True)] * 3 + [active("deny", False)],
        True,
        False,
    ),
    (
        "auto, active denies, one without manual",
        [active("deny", True)] * 3 + [active("deny", False)],
        False,
        False,
    ),
    (
        "manual, active deny and allow without manual",
        [active("allow", False), active("deny", False)],
        True,
        False,
    ),
    (
        "manual, active deny with manual and allow",
        [active("allow", False), active("deny", True)],
        True,
        True,
    ),
    (
        "auto, active deny with manual and allow",
        [active("allow", False), active("deny", True)],
        False,
        False,
    ),
    ("no windows", [], False, True),
]


@pytest.mark.parametrize(("name", "windows", "manual", "allowed"), CAN_SYNC)
def test_can_sync_as_argo_cd(
    name: str, windows: list[SyncWindow], manual: bool, allowed: bool
) -> None:
    assert can_sync(windows, NOW, manual=manual).allowed is allowed


@pytest.mark.parametrize(
    "windows",
    [
        [window(k, "* 10 * * 7", "1h", manual_sync=m) for k in ("allow", "deny") for m in (0, 1)],
        [active("allow", False), window("allow", "invalid-cron-schedule", "1h")],
        [active("allow", False), window("allow", "0 21 * * *", "invalid-duration")],
    ],
)
def test_invalid_windows_refuse_every_sync_and_say_why(windows: list[SyncWindow]) -> None:
    v = can_sync(windows, NOW, manual=True)
    assert not v.allowed
    assert "is invalid: cannot parse" in v.reason


def test_a_refusal_says_until_when() -> None:
    deny = window("deny", "0 11 * * *", "2h", "Europe/Paris")  # 09:00-11:00 UTC in July
    v = can_sync([deny], at(9, 30), manual=True)
    assert (v.allowed, v.reason, v.until) == (False, "in a deny window", at(11))
    assert can_sync([deny], at(11), manual=True).allowed
    allow = window("allow", "0 22 * * *", "1h")
    v = can_sync([allow], NOW, manual=True)
    assert (v.allowed, v.reason, v.until) == (False, "outside every allow window", at(22))
    assert v.windows == (allow,)


# TestSyncWindows_SyncOverrun: a sync that started while allowed, with syncOverrun
def test_overrun_lets_a_sync_started_before_a_deny_window_go_on() -> None:
    always = active("allow", False)
    deny = window("deny", f"{NOW.minute} {NOW.hour} * * *", "15m", sync_overrun=True)
    before = NOW - datetime.timedelta(minutes=25)
    assert can_sync(
        [always, deny], NOW + datetime.timedelta(seconds=30), manual=False, started=before
    ).allowed
    assert not can_sync([always, deny], NOW + datetime.timedelta(seconds=30), manual=False).allowed


@pytest.mark.parametrize("overrun", [False, True])
def test_overrun_never_lets_a_sync_started_in_the_deny_window_go_on(overrun: bool) -> None:
    deny = window("deny", "* * * * *", "1h", sync_overrun=overrun)
    started = NOW - datetime.timedelta(minutes=5)
    assert not can_sync([active("allow", False), deny], NOW, manual=False, started=started).allowed


def test_overrun_lets_a_sync_started_in_an_allow_window_finish_after_it() -> None:
    allow = window("allow", "0 10 * * *", "1h", sync_overrun=True)
    assert can_sync([allow], NOW, manual=False, started=at(10, 30)).allowed
    assert not can_sync([allow], NOW, manual=False, started=at(9, 30)).allowed
    plain = window("allow", "0 10 * * *", "1h")
    assert not can_sync([plain], NOW, manual=False, started=at(10, 30)).allowed


def test_an_appproject_is_read_as_the_api_server_holds_it() -> None:
    raw = {
        "metadata": {"name": "team-a"},
        "spec": {
            "destinations": [
                {"server": K8S, "namespace": "web"},
                {"name": "prod-*", "namespace": "*"},
            ],
            "syncWindows": [
                {
                    "kind": "deny",
                    "schedule": "0 22 * * *",
                    "duration": "1h",
                    "clusters": ["prod-*"],
                    "manualSync": True,
                    "timeZone": "Europe/Paris",
                    "andOperator": True,
                    "description": "nightly backups",
                }
            ],
            "permitOnlyProjectScopedClusters": True,
        },
    }
    p = parse_project(raw)
    assert p.name == "team-a"
    assert p.destinations == (D(K8S, "", "web"), D("", "prod-*", "*"))
    assert p.scoped_only
    (w,) = p.windows
    assert (w.kind, w.clusters, w.manual_sync, w.time_zone, w.and_operator) == (
        "deny",
        ("prod-*",),
        True,
        "Europe/Paris",
        True,
    )
    assert w.describe() == "deny window 0 ('0 22 * * *' for 1h, Europe/Paris): nightly backups"
    assert parse_project({"metadata": {"name": "empty"}}) == Project("empty")
