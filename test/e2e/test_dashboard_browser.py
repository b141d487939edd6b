"""`okra dashboard` in a real headless Chromium (Debian's `chromium`, driven by Selenium through
Debian's `chromium-driver`), against the real okra-manager, control plane and moto.

One scenario, one okra-manager and one browser: the Cells list shows a Cell whose rollout is
running; promote on the Cell's page (with its confirmation) moves the Cell to its next step,
and the weights AWS then shows appear on the open page without a reload (the delay from AWS
showing them to the page showing them is measured and printed, not asserted: bench/ and
docs/dashboard.md hold the figure); a user with the okra-viewer role gets the API server's
refusal on the page.

A second scenario runs the seed-004 ProgressiveRollout example on the real Argo CD and three
workload control planes (e2e/progressive_world.py): the ProgressiveRollouts page, left open,
shows a new commit's wave move stage by stage, with each stage's gates and clusters, until
every stage is done.

Selenium rather than Playwright: Debian's chromedriver is built from the same source as its
chromium, so the two always match, and Selenium is pure Python; Playwright's driver speaks to
the browser build it pins and ships a Node runtime in its wheel, and its own browsers cannot be
downloaded here.

`OKRA_DOCS_SCREENSHOTS=1` writes a PNG of each page to docs/images/ (docs/dashboard.md shows
them); otherwise nothing is written to the tree.

Without chromium and chromedriver the test is skipped with the reason, except under `CI=true`
(.ci/run installs them), where their absence fails it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import queue
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from e2e.progressive_world import SLOW, App, start
from okra_controllers.api.kinds import CLUSTER_FREEZE, FREEZE, PROGRESSIVE_ROLLOUT
from okra_runtime import GVK, Client
from okra_runtime.errors import NotFoundError
from okra_testkit.envtest import ControlPlane
from okra_testkit.envtest.controlplane import UNPRIVILEGED
from support import judged_rollback

from .conftest import (
    CELL,
    REPO,
    VERSION_ARG,
    Env,
    Metrics,
    OkraManager,
    cell_obj,
    error_rate_template,
    wait_status,
)

pytestmark = pytest.mark.e2e

IMAGES = REPO / "docs" / "images"
SCREENSHOTS = os.environ.get("OKRA_DOCS_SCREENSHOTS") == "1"
PAGE_WAIT = 60.0


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    chromium, driver = shutil.which("chromium"), shutil.which("chromedriver")
    if chromium is None or driver is None:
        why = (
            "Debian's chromium and chromium-driver are not installed "
            "(apt-get install chromium chromium-driver; .ci/run installs them)"
        )
        if os.environ.get("CI") == "true":
            pytest.fail(why)
        pytest.skip(why)
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    options = Options()
    options.binary_location = chromium
    for arg in (
        "--headless=new",
        "--no-sandbox",  # root in CI
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--window-size=1360,1000",
    ):
        options.add_argument(arg)
    d = webdriver.Chrome(options=options, service=Service(executable_path=driver))
    try:
        yield d
    finally:
        d.quit()


class Dashboard:
    """An `okra dashboard` process (as the user of `kubeconfig`) and the URL it printed."""

    def __init__(self, kubeconfig: Path, namespace: str, log: Path) -> None:
        self.log = log
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "okra_controllers.cli",
                "dashboard",
                "--kubeconfig",
                str(kubeconfig),
                "-n",
                namespace,
                "--port",
                "0",
            ],
            stdout=subprocess.PIPE,
            stderr=open(log, "ab"),  # noqa: SIM115 (the process owns it)
            text=True,
        )
        lines: queue.Queue[str] = queue.Queue()
        assert self.proc.stdout is not None
        out = self.proc.stdout

        def read() -> None:
            for line in out:
                lines.put(line)

        threading.Thread(target=read, daemon=True).start()
        try:
            first = lines.get(timeout=60)
        except queue.Empty:
            self.stop()
            raise AssertionError(f"okra dashboard printed no URL: {log.read_text()}") from None
        assert first.startswith("okra dashboard: http://127.0.0.1:"), first
        self.url = first.split()[2]

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


async def page_until(browser: Any, script: str, what: str, within: float = PAGE_WAIT) -> Any:
    """Wait until `script` (JavaScript returning a value) returns something truthy in the page;
    the waiting runs in a thread, so the test's event loop (moto's proxy) keeps running."""
    from selenium.common.exceptions import TimeoutException
    from selenium.webdriver.support.ui import WebDriverWait

    def wait() -> Any:
        return WebDriverWait(browser, within, poll_frequency=0.05).until(
            lambda d: d.execute_script(script)
        )

    try:
        return await asyncio.to_thread(wait)
    except TimeoutException:
        body = await asyncio.to_thread(browser.execute_script, "return document.body.innerText")
        raise AssertionError(f"the page never showed {what}; it shows:\n{body}") from None


def text_has(*words: str) -> str:
    checks = " && ".join(f"t.includes({w!r})" for w in words)
    return f"const t = document.body.innerText; return {checks};"


DISABLED_WITH_REASON = """
const b = document.querySelector(`button[data-action='${arguments[0]}']`);
const why = document.querySelector(`.why[data-why='${arguments[0]}']`);
return [b.disabled, why ? why.textContent : null];
"""
"""Whether the action's button is disabled, and the reason shown beside it (null: none)."""


async def click_and_confirm(browser: Any, action: str) -> None:
    """Click the action's button, then Confirm in the dialog it opens (in one script: a live
    frame may redraw the buttons between two WebDriver calls)."""
    script = f"""
    document.querySelector("button[data-action='{action}']").click();
    if (document.getElementById('confirm').hidden) return 'no confirmation asked';
    document.getElementById('confirm-yes').click();
    return 'confirmed';
    """
    assert await asyncio.to_thread(browser.execute_script, script) == "confirmed"


async def filter_hides_and_shows(browser: Any, ns: str) -> None:
    """Typing in the filter box hides the rows that do not match, and typing the Cell's
    namespace brings its row back."""
    shown = f"document.querySelector(\"tr[data-key='{ns}/web']\") !== null"

    def typed(text: str) -> None:
        box = browser.find_element("id", "filter")
        box.clear()
        box.send_keys(text)

    await asyncio.to_thread(typed, "no-such-cell")
    await page_until(browser, f"return !({shown})", "the row filtered out")
    await asyncio.to_thread(typed, ns)
    await page_until(browser, f"return {shown}", "the row matching the filter")


def screenshot(browser: Any, name: str) -> None:
    if SCREENSHOTS:
        IMAGES.mkdir(parents=True, exist_ok=True)
        browser.save_screenshot(str(IMAGES / f"dashboard-{name}.png"))


def viewer_role(namespace: str, *, cluster_wide: str = "") -> list[dict[str, Any]]:
    """okra-viewer's rules (config/rbac) as a Role in `namespace`, bound to the plane's
    unprivileged user; with `cluster_wide` (a name), as a ClusterRole of that name bound
    cluster-wide instead."""
    docs = list(yaml.safe_load_all((REPO / "config/rbac/viewer_role.yaml").read_text()))
    rules = next(d for d in docs if d and d["kind"] == "ClusterRole")["rules"]
    kind = "ClusterRole" if cluster_wide else "Role"
    meta = (
        {"name": cluster_wide} if cluster_wide else {"name": "okra-viewer", "namespace": namespace}
    )
    return [
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": kind,
            "metadata": meta,
            "rules": rules,
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": f"{kind}Binding",
            "metadata": meta,
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": kind,
                "name": meta["name"],
            },
            "subjects": [
                {"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": UNPRIVILEGED}
            ],
        },
    ]


async def aws_shows(env: Env, want: dict[str, int], stop: Callable[[], bool]) -> float | None:
    """When (epoch seconds) moto's rule first showed `want`, polling until `stop()`."""
    while not stop():
        if await env.rule_weights() == want:
            return time.time()
        await asyncio.sleep(0.02)
    return None


SEEN_WEIGHTS = """
window.okraSeen = {};
window.okraMarker = 'no reload';
const note = () => document.querySelectorAll('[data-weights]').forEach((el) => {
  const seen = window.okraSeen;
  if (!(el.dataset.weights in seen)) seen[el.dataset.weights] = Date.now() / 1000;
});
note();
new MutationObserver(note).observe(document.body, {subtree: true, childList: true});
"""


async def test_dashboard_shows_a_rollout_live_promotes_it_and_shows_a_viewers_refusal(
    env: Env,
    okra: OkraManager,
    metrics: Metrics,
    rt_client: Client,
    namespace: str,
    control_plane: ControlPlane,
    browser: Any,
    tmp_path: Path,
) -> None:
    ns = namespace
    await rt_client.create(error_rate_template(ns, metrics.url))
    await env.target_group("web-a-v1", "v1")
    steps: list[dict[str, Any]] = [
        {"setWeight": 20},
        {"pause": {}},
        {"setWeight": 50},
        {"pause": {}},
    ]
    bg = {"templates": [{"templateName": "error-rate"}], "args": VERSION_ARG}
    await rt_client.create(cell_obj(ns, env.alb.listener_arn, steps, background=bg))
    await wait_status(rt_client, ns, lambda s: s.get("health") == "Healthy")
    await env.target_group("web-a-v2", "v2")
    await wait_status(
        rt_client, ns, lambda s: s.get("health") == "Paused" and s.get("currentStepIndex") == 1
    )
    assert await env.rule_becomes({"web-a-v1": 80, "web-a-v2": 20})

    admin = Dashboard(control_plane.kubeconfig(), ns, tmp_path / "dashboard.log")
    try:
        # The list: the Cell, its versions, its step and the weights AWS shows.
        await asyncio.to_thread(browser.get, admin.url)
        await page_until(
            browser, text_has("web", "step 2 of 4", "v1 80 · v2 20"), "the rolling Cell"
        )
        row = await asyncio.to_thread(
            browser.execute_script,
            f"return document.querySelector(\"tr[data-key='{ns}/web']\").innerText",
        )
        assert "Migrating" in row, row
        assert "v1 → v2" in row, row
        screenshot(browser, "cells")
        await filter_hides_and_shows(browser, ns)

        # The Cell's page; promote there moves the Cell on, and the new weights AWS shows
        # reach the open page (no reload: the marker set in the page survives).
        await asyncio.to_thread(browser.get, f"{admin.url}#/cell/{ns}/web")
        await page_until(browser, text_has("Steps", "pause (until promoted)"), "the Cell page")
        await page_until(browser, "return !!document.getElementById('weights-chart')", "a chart")
        await page_until(browser, "return !!document.getElementById('events')", "the Events")
        await page_until(browser, text_has("error-rate", "result < 0.05"), "the analysis")
        # What would do nothing now is offered disabled, with the CLI's reason beside it.
        retry = await asyncio.to_thread(browser.execute_script, DISABLED_WITH_REASON, "retry")
        assert retry[0] is True, retry
        assert retry[1].startswith("Retry: nothing to retry (no rollout is aborted"), retry
        assert (await asyncio.to_thread(browser.execute_script, DISABLED_WITH_REASON, "abort")) == [
            False,
            None,
        ]
        await asyncio.to_thread(browser.execute_script, SEEN_WEIGHTS)
        done = False
        aws = asyncio.create_task(aws_shows(env, {"web-a-v1": 50, "web-a-v2": 50}, lambda: done))
        clicked = time.monotonic()
        await click_and_confirm(browser, "promote")
        await page_until(browser, text_has("ending the pause at step 2"), "promote's message")
        shown = await page_until(
            browser, "return window.okraSeen['v1 50 · v2 50']", "the weights after promote"
        )
        done = True
        aws_at = await aws
        assert aws_at is not None, "moto's rule never showed 50/50"
        marker = await asyncio.to_thread(browser.execute_script, "return window.okraMarker")
        assert marker == "no reload"
        modified = [t for t, a in env.proxy.calls if t >= clicked and a == "ModifyRule"]
        assert modified, "okra never called ModifyRule after promote"
        # The ModifyRule's arrival at moto, on the page's clock (epoch seconds): AWS shows
        # the weights from shortly after it, so the delay measured from it is an upper bound.
        modify_at = time.time() - (time.monotonic() - modified[-1])
        print(
            f"\ndashboard: the page showed the new weights {shown - modify_at:.3f} s after "
            "okra's ModifyRule reached AWS"
        )
        st = await wait_status(rt_client, ns, lambda s: (s.get("currentStepIndex") or 0) >= 2)
        assert st["canaryVersion"] == "v2"
        await page_until(browser, text_has("step 4 of 4"), "the next step on the page")
        screenshot(browser, "cell")

        await asyncio.to_thread(browser.get, f"{admin.url}#/inventory")
        await page_until(browser, text_has("web-a-v1", "web-a-v2", "AWSTargetGroups"), "inventory")
        screenshot(browser, "inventory")
        await asyncio.to_thread(browser.get, f"{admin.url}#/rollouts")
        await page_until(browser, text_has("ProgressiveRollouts"), "the rollouts page")
    finally:
        admin.stop()

    # A viewer reads everything and is refused promote by the API server: the page says so.
    for obj in viewer_role(ns):
        await rt_client.create(obj)
    viewer = Dashboard(
        control_plane.kubeconfig(UNPRIVILEGED), ns, tmp_path / "dashboard-viewer.log"
    )
    try:
        await asyncio.to_thread(browser.get, f"{viewer.url}#/cell/{ns}/web")
        await page_until(browser, text_has("step 4 of 4"), "the Cell, read as a viewer")
        await click_and_confirm(browser, "promote")
        await page_until(browser, text_has("Forbidden", "RBAC", "forbidden"), "the refusal")
        screenshot(browser, "forbidden")
    finally:
        viewer.stop()
    cell = await rt_client.get(CELL, "web", ns)
    assert (cell.get("status") or {}).get("currentStepIndex") == 3, "the refused promote moved it"


STAGE_LOG = """
window.okraStages = [];
window.okraMarker = 'no reload';
const key = arguments[0];
const note = () => {
  const card = document.querySelector(`.rollout[data-key="${key}"]`);
  if (!card) return;
  const stages = [...card.querySelectorAll('.stage')].map((s) => s.dataset.phase);
  const seen = JSON.stringify([card.dataset.revision, card.dataset.phase, stages]);
  const log = window.okraStages;
  if (log[log.length - 1] !== seen) log.push(seen);
};
note();
new MutationObserver(note).observe(document.body, {subtree: true, childList: true});
"""
"""Records in the page every state of one rollout's card it shows: [revision, phase, the
stages' phases], each time it changes."""


def front(stages: list[str]) -> int:
    """Where the wave is: the first stage not yet Completed (len(stages) when all are)."""
    return next((i for i, phase in enumerate(stages) if phase != "Completed"), len(stages))


async def test_the_rollouts_page_shows_the_seed_examples_stages_advancing_without_a_reload(
    app: App,
    rollout_okra: OkraManager,
    control_plane: ControlPlane,
    browser: Any,
    tmp_path: Path,
) -> None:
    ns = app.argocd.namespace
    first = await start(app, rollout_okra)
    # A short bake in the second stage: the wave holds there long enough for the screenshot.
    pr = await app.client.get(PROGRESSIVE_ROLLOUT, app.name, ns)
    pr["spec"]["stages"][1]["bakeTime"] = "3s"
    await app.client.update(pr)

    card = f"document.querySelector(\".rollout[data-key='{ns}/{app.name}']\")"
    board = Dashboard(control_plane.kubeconfig(), ns, tmp_path / "dashboard.log")
    try:
        await asyncio.to_thread(browser.get, f"{board.url}#/rollouts")
        at_first = f"const c = {card}; return !!c && c.dataset.revision === '{first}' && "
        await page_until(
            browser, at_first + "c.dataset.phase === 'Completed'", "the rollout done at v1"
        )
        # The seed example's stages and their gates, as the spec gives them.
        shown = await asyncio.to_thread(browser.execute_script, f"return {card}.innerText")
        for words in (
            "1. canary in EMEA",
            "2. eu-west-1",
            "3. eu-central-1",
            "clusters area=emea",
            "at most 2 unavailable at once",
            "one per region at a time",
            "requeue drained=true: 5 tries, every 30m",
            "bake 3s once healthy",
        ):
            assert words in shown, (words, shown)
        await asyncio.to_thread(browser.execute_script, STAGE_LOG, f"{ns}/{app.name}")

        second = app.commit("v2")
        baking = (
            f"const c = {card}; return !!c && c.dataset.revision === '{second}' && "
            "!!c.querySelector(\"[data-stage='eu-west-1'] [data-phase='Baking']\") && "
            "c.innerText.includes('bake ')"
        )
        await page_until(browser, baking, "the second stage's cluster baking", within=SLOW)
        screenshot(browser, "rollouts")
        done = f"const c = {card}; return c.dataset.revision === '{second}' && "
        await page_until(
            browser, done + "c.dataset.phase === 'Completed'", "the rollout done at v2", SLOW
        )
        marker = await asyncio.to_thread(browser.execute_script, "return window.okraMarker")
        assert marker == "no reload"
        # The record the manager wrote: v2's rollout, then v1's, both Completed, every stage.
        past = await page_until(
            browser,
            f"const t = {card}.querySelector('.past-revisions'); return t && "
            "t.querySelector('summary').innerText.includes('(2)') && "
            "[...t.querySelectorAll('tr')].slice(1).map((r) => "
            "[...r.querySelectorAll('td')].map((d) => d.textContent.trim()))",
            "the past revisions",
        )
        assert [(row[0], row[3], row[4]) for row in past] == [
            (second[:8], "Completed", "3/3"),
            (first[:8], "Completed", "3/3"),
        ], past
        log = await asyncio.to_thread(browser.execute_script, "return window.okraStages")
        # Argo CD's namespace holds the clusters' Secrets: none of their tokens is on the page.
        source = await asyncio.to_thread(lambda: browser.page_source)
        assert not [name for name, plane in app.planes.items() if plane.token() in source]
    finally:
        board.stop()

    # What the open page showed of v2's rollout: the wave moved forward only, one stage after
    # another (a later stage waiting while an earlier one ran), until every stage was done.
    states = [json.loads(x) for x in log]
    ours = [(phase, stages) for revision, phase, stages in states if revision == second]
    fronts = [front(stages) for _, stages in ours]
    assert fronts == sorted(fronts), states
    assert {0, 1} <= set(fronts), states
    for (_, stages), at in zip(ours, fronts, strict=True):
        assert all(phase == "Pending" for phase in stages[at + 1 :]), states
    assert ours[-1] == ("Completed", ["Completed"] * 3), states
    assert len(states) > len(ours), "the page never showed v1 before v2"


async def test_the_freeze_banner_lifts_a_freeze_with_the_users_rights(
    okra_crds: list[str],
    rt_client: Client,
    namespace: str,
    control_plane: ControlPlane,
    browser: Any,
    tmp_path: Path,
) -> None:
    """A Freeze that applies is a banner on every page; Lift deletes it as the user of the
    dashboard: a viewer is refused by the API server (the page says so), an admin lifts it."""
    ns = namespace
    freeze = {
        "apiVersion": "okra.mumo.co/v1alpha1",
        "kind": "Freeze",
        "metadata": {"name": "incident", "namespace": ns},
        "spec": {"reason": "INC-7: checkout errors", "author": "bob"},
    }
    await rt_client.create(freeze)
    banner = f"Frozen: {ns}/incident (INC-7: checkout errors, by bob) until lifted"
    for obj in viewer_role(ns):
        await rt_client.create(obj)
    viewer = Dashboard(
        control_plane.kubeconfig(UNPRIVILEGED), ns, tmp_path / "dashboard-viewer.log"
    )
    try:
        await asyncio.to_thread(browser.get, f"{viewer.url}#/rollouts")
        await page_until(browser, text_has(banner), "the freeze banner, read as a viewer")
        await click_and_confirm(browser, "lift")
        await page_until(browser, text_has("Forbidden", "RBAC", "freezes"), "the refusal")
    finally:
        viewer.stop()
    assert await rt_client.get(FREEZE, "incident", ns)  # the refused lift changed nothing
    admin = Dashboard(control_plane.kubeconfig(), ns, tmp_path / "dashboard.log")
    try:
        await asyncio.to_thread(browser.get, f"{admin.url}#/cells")
        await page_until(browser, text_has(banner), "the freeze banner")
        await click_and_confirm(browser, "lift")
        await page_until(browser, text_has("freeze incident lifted"), "lift's message")
        await page_until(
            browser, "return document.getElementById('freezes').hidden", "the banner gone"
        )
    finally:
        admin.stop()
    assert not (await rt_client.list(FREEZE, ns)).items


async def test_the_banner_shows_a_cluster_freeze_and_lifts_it_with_the_users_rights(
    okra_crds: list[str],
    rt_client: Client,
    namespace: str,
    control_plane: ControlPlane,
    browser: Any,
    tmp_path: Path,
) -> None:
    """A ClusterFreeze that applies is a banner too, naming the namespaces it selects; Lift
    deletes it as the dashboard's user: one who may read ClusterFreezes (okra-viewer bound
    cluster-wide) but not delete them is refused, an admin lifts it."""
    ns = namespace
    name = f"fleet-{ns}"
    picked = f"kubernetes.io/metadata.name={ns}"  # only this test's namespace
    await rt_client.create(
        {
            "apiVersion": "okra.mumo.co/v1alpha1",
            "kind": "ClusterFreeze",
            "metadata": {"name": name},
            "spec": {
                "reason": "year-end",
                "author": "carol",
                "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": ns}},
            },
        }
    )
    banner = f"Frozen: clusterfreeze {name} (year-end, by carol) until lifted; namespaces {picked}"
    grants = viewer_role(ns, cluster_wide=f"okra-viewer-{ns}")
    try:
        for obj in grants:
            await rt_client.create(obj)
        viewer = Dashboard(
            control_plane.kubeconfig(UNPRIVILEGED), ns, tmp_path / "dashboard-viewer.log"
        )
        try:
            await asyncio.to_thread(browser.get, f"{viewer.url}#/cells")
            await page_until(browser, text_has(banner), "the banner, read as a viewer")
            await click_and_confirm(browser, "lift")
            await page_until(
                browser, text_has("Forbidden", "RBAC", "clusterfreezes"), "the refusal"
            )
        finally:
            viewer.stop()
        assert await rt_client.get(CLUSTER_FREEZE, name)  # the refused lift changed nothing
        admin = Dashboard(control_plane.kubeconfig(), ns, tmp_path / "dashboard.log")
        try:
            await asyncio.to_thread(browser.get, f"{admin.url}#/rollouts")
            await page_until(browser, text_has(banner), "the banner")
            await click_and_confirm(browser, "lift")
            await page_until(browser, text_has(f"clusterfreeze {name} lifted"), "lift's message")
            await page_until(
                browser, "return document.getElementById('freezes').hidden", "the banner gone"
            )
        finally:
            admin.stop()
    finally:
        for obj in grants:
            with contextlib.suppress(NotFoundError):
                await rt_client.delete(
                    GVK.of(obj["apiVersion"], obj["kind"]), obj["metadata"]["name"]
                )
        with contextlib.suppress(NotFoundError):
            await rt_client.delete(CLUSTER_FREEZE, name)


LISTENER = (
    "arn:aws:elasticloadbalancing:us-east-1:123456789012:listener/app/web/50dc6c495c0c9188/"
    "f2f7dc8efc522ab2"
)
DRAWN = """
const q = (s) => [...document.querySelectorAll(s)];
const row = document.querySelector("tr[data-metric='p99']");
return {
  weight: document.querySelector("path.canary-weight").getAttribute("d"),
  ticks: q(".tick").map((t) => t.dataset.reason),
  analyses: q(".analysis-mark").length,
  frozen: q("rect.frozen").length,
  traffic: q(".step-traffic").map((t) => t.innerText),
  lanes: q(".lane circle").length,
  score: document.querySelector(".score").innerText,
  metric: row.innerText,
  sides: q("tr[data-metric='p99'] .box").map((b) => b.dataset.side),
};
"""
"""What the rollout's page drew: its weight line, ticks, analysis marks, measurement dots and
canary report."""


async def test_a_past_rollout_has_a_page_with_its_timeline_and_canary_report(
    okra_crds: list[str],
    rt_client: Client,
    namespace: str,
    control_plane: ControlPlane,
    browser: Any,
    tmp_path: Path,
) -> None:
    """A Cell's record of a rolled-back rollout, as the API server holds it: the Cell's page
    lists it; its own page draws the canary's weight step by step, the Events and the
    analysis on one time axis, and the judged metric's canary report (the score against its
    thresholds, the verdict, the effect size, the p-value and both samples' box plots)."""
    ns = namespace
    cell = await rt_client.create(cell_obj(ns, LISTENER, [{"setWeight": 20}, {"setWeight": 40}]))
    cell["status"] = {
        "phase": "Error",
        "health": "Degraded",
        "stableVersion": "v1",
        "history": [judged_rollback()],
    }
    await rt_client.update_status(cell)
    admin = Dashboard(control_plane.kubeconfig(), ns, tmp_path / "dashboard.log")
    try:
        await asyncio.to_thread(browser.get, f"{admin.url}#/cell/{ns}/web")
        await page_until(
            browser,
            text_has("Past rollouts", "20261204t0251-ab12", "RolledBack", "4m3s"),
            "the Cell's past rollouts",
        )
        await asyncio.to_thread(
            browser.execute_script, "document.querySelector('#past-rollouts a').click()"
        )
        await page_until(
            browser,
            text_has("rollout 20261204t0251-ab12", "version v2 failed: p99 +38%", "score 41"),
            "the rollout's page",
        )
        drawn = await asyncio.to_thread(browser.execute_script, DRAWN)
        screenshot(browser, "rollout")
        if SCREENSHOTS:
            await asyncio.to_thread(
                browser.execute_script,
                "document.querySelector('[data-analysis]').scrollIntoView()",
            )
            screenshot(browser, "canary-report")
    finally:
        admin.stop()
    # 20 % then 40 %: the line starts at step 1's weight and steps up once (y = 16 + (1 -
    # w / 100) * 134 in the chart's units)
    assert drawn["weight"].startswith("M"), drawn
    assert drawn["weight"].count("V") == 1, drawn
    assert ",123.2H" in drawn["weight"], drawn
    assert "V96.4H" in drawn["weight"], drawn
    assert drawn["ticks"] == ["RolloutStarted", "RolloutFailed"], drawn
    assert (drawn["analyses"], drawn["lanes"], drawn["frozen"]) == (1, 1, 1), drawn
    assert drawn["traffic"][0].startswith("Confirmed v1 80.4% (planned 80%), v2 19.6%"), drawn
    assert drawn["traffic"][1] == "", drawn
    assert "Fail" in drawn["score"], drawn
    assert "passes at 90, marginal from 75" in drawn["score"], drawn
    for shown in ("High", "+38%", "0.0001"):
        assert shown in drawn["metric"], drawn
    assert drawn["sides"] == ["baseline", "canary"], drawn
