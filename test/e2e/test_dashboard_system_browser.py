"""`okra dashboard`'s Cells page and a system Cell (seed 002), in a real headless Chromium,
against the real control plane, the system Cell, Cell, ALB config and Check controllers, and
EKS and the ALB in moto (the system Cell's integration world: test_system_cell.py).

The system is one card, its application Cells inside it and not rows of their own. Left
open, the card shows the late cluster the system waits for; Pause on the card pauses the
system (`okra pause SYSTEM`), so once the cluster is there every application holds at the
weights AWS shows; Promote on the card (`okra promote SYSTEM`: resume, then each
application's Cell) sets them all moving, and the page shows each application's weights
advancing step by step to the new clusters, without a reload. A user with the okra-viewer
role reads the card, and the API server refuses their Pause, of the system and of one
application alike: the page says so, and nothing is written.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from e2e.test_dashboard_browser import (
    Dashboard,
    browser,
    page_until,
    screenshot,
    text_has,
    viewer_role,
)
from integration.test_system_cell import REPO, System, application, running
from okra_runtime import GVK, Client
from okra_testkit.emulator import MotoServer
from okra_testkit.envtest import ControlPlane
from okra_testkit.envtest.controlplane import UNPRIVILEGED
from okra_testkit.localeks import LocalEks
from okra_testkit.seed import LoadBalancer, Seeder
from support import ErrorRates, eventually, serve_error_rates

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(420)]
CELL = GVK("okra.mumo.co", "v1alpha1", "Cell")
__all__ = ["browser"]  # the module's fixture: one Chromium for the module

APP_LOG = r"""
window.okraApps = {};
window.okraChecks = {};
window.okraMarker = 'no reload';
const card = arguments[0];
const apps = () => document.querySelectorAll(`${card} .application[data-application]`);
const note = () => apps().forEach((el) => {
  el.querySelectorAll('.check').forEach((c) => {
    const line = c.innerText.replace(/ \d+[smh] ago/, '');
    window.okraChecks[`${el.dataset.application}: ${line}`] = true;
  });
  const w = el.querySelector('[data-weights]');
  if (!w) return;
  const log = (window.okraApps[el.dataset.application] ||= []);
  if (!log.length || log[log.length - 1][0] !== w.dataset.weights) {
    log.push([w.dataset.weights, Date.now() / 1000]);
  }
});
note();
new MutationObserver(note).observe(document.body, {subtree: true, childList: true});
"""
"""Records in the page each weights text every application of the card shows, with when it
first showed it, and each line its Checks showed."""


HIDE_NOTICE = "document.getElementById('notice').hidden = true;"
"""Hides the last action's message, so that the next one's is the one on the page."""


def share(weights: str, version: str) -> int:
    """`version`'s share of the total in a weights text (`v1 50 · v2 50`), in percent."""
    pairs = {v: int(w) for v, _, w in (p.rpartition(" ") for p in weights.split(" · "))}
    total = sum(pairs.values()) or 1
    return round(100 * pairs.get(version, 0) / total)


async def click_and_confirm_on(browser: Any, selector: str, question: str) -> None:
    """Click the button `selector` picks, check the question the confirmation asks, then
    Confirm (in one script: a live frame may redraw the card between two WebDriver calls)."""
    script = f"""
    const b = document.querySelector({selector!r});
    if (!b) return 'no button ' + {selector!r};
    b.click();
    if (document.getElementById('confirm').hidden) return 'no confirmation asked';
    const asked = document.getElementById('confirm-text').textContent;
    document.getElementById('confirm-yes').click();
    return asked;
    """
    assert await asyncio.to_thread(browser.execute_script, script) == question


@pytest.fixture
async def rates() -> AsyncIterator[ErrorRates]:
    async with serve_error_rates() as r:
        yield r


@pytest.fixture
async def world(
    rt_client: Client,
    namespace: str,
    control_plane: ControlPlane,
    workload_plane: ControlPlane,
    moto: MotoServer,
) -> AsyncIterator[tuple[System, LoadBalancer]]:
    control_plane.install_crds([REPO / "config" / "crd" / "bases"])
    async with LocalEks(moto) as eks:
        network = await Seeder(eks.config).network()
        alb = await Seeder(eks.config).alb(f"dsh-{namespace[-8:]}", network)
        yield System(rt_client, namespace, eks, workload_plane, network), alb


async def test_the_system_card_shows_the_late_cluster_then_promote_moves_every_application(
    world: tuple[System, LoadBalancer],
    rt_client: Client,
    namespace: str,
    control_plane: ControlPlane,
    rates: ErrorRates,
    browser: Any,
    tmp_path: Path,
) -> None:
    s, alb = world
    ns = namespace
    v1 = [
        await s.cluster("web-1-v1", "web"),
        await s.cluster("web-2-v1", "web"),
        await s.cluster("api-v1", "api"),
    ]
    # each step of both applications waits for its checks (a run on each new cluster)
    apps = [
        application("web", "web", alb.listener_arn, 10, 50, rates.url),
        application("api", "api", alb.listener_arn, 11, 50, rates.url),
    ]
    system = {
        "apiVersion": "okra.mumo.co/v1alpha1",
        "kind": "Cell",
        "metadata": {"name": "sys", "namespace": ns},
        "spec": {"clusters": v1, "applications": apps},
    }
    await rt_client.create(system)
    card = f".system[data-key='{ns}/sys']"
    app_sel = f"{card} .application[data-application='{{}}']"
    async with running(rt_client, ns, s.eks.config):

        async def completed() -> bool:
            return (await s.status()).get("phase") == "Completed"

        assert await eventually(completed, within=120), await s.debug()
        board = Dashboard(control_plane.kubeconfig(), ns, tmp_path / "dashboard.log")
        try:
            await asyncio.to_thread(browser.get, board.url)
            # One card; the application Cells are in it, not rows beside it.
            synced = (
                f'const c = document.querySelector("{card}"); return !!c && '
                "c.dataset.phase === 'Completed' && "
                "[...c.querySelectorAll('.application[data-application]')]"
                ".map((a) => a.dataset.phase).join() === 'Synced,Synced' && "
                "[...c.querySelectorAll('.application[data-application]')].every((a) => "
                "a.querySelector(\"[data-weights='v1 100']\") !== null)"
            )
            await page_until(browser, synced, "the system Completed at v1")
            rows = await asyncio.to_thread(
                browser.execute_script,
                "return [...document.querySelectorAll('tr[data-key]')].map((r) => r.dataset.key)",
            )
            assert rows == [], rows
            links = await asyncio.to_thread(
                browser.execute_script,
                f'return [...document.querySelectorAll("{card} .application a")]'
                ".map((a) => a.getAttribute('href'))",
            )
            assert links == [f"#/cell/{ns}/sys-web", f"#/cell/{ns}/sys-api"], links
            shown = await asyncio.to_thread(
                browser.execute_script,
                f'return document.querySelector("{app_sel.format("web")}").innerText',
            )
            assert "v1 serving: web-1-v1 50, web-2-v1 50" in shown, shown

            # Pause the system from its card: okra pause sys.
            await click_and_confirm_on(
                browser,
                f"{card} > .actions button[data-action='pause']",
                f"Pause system {ns}/sys (every application)?",
            )
            await page_until(browser, text_has("system sys: paused"), "pause's message")
            await page_until(
                browser,
                f"return document.querySelector(\"{card}\")?.dataset.paused === 'true'",
                "the system paused",
            )

            # A new cluster set whose second web cluster is not in EKS yet.
            web_1_v2 = await s.cluster("web-1-v2", "web")
            late = await s.cluster("web-2-v2", "web", eks=False)
            api_v2 = await s.cluster("api-v2", "api")
            await s.set_clusters([web_1_v2, late, api_v2])
            # The card: the two clusters that are there ready, the late one waited for (and
            # for how long), the system Pending and saying which cluster it waits for.
            ready = f"[...document.querySelectorAll(\"{card} [data-ready='true']\")]"
            waiting = (
                f"const k = document.querySelector(\"{card} [data-cluster='web-2-v2']\"); "
                f'const c = document.querySelector("{card}"); '
                "return !!k && k.dataset.ready === 'false' && "
                "k.innerText.includes('not found in EKS') && "
                "/waiting for \\d+s/.test(k.innerText) && "
                f"{ready}.map((r) => r.dataset.cluster).join() === 'web-1-v2,api-v2' && "
                "c.dataset.phase === 'Pending' && "
                "c.innerText.includes('web-2-v2: not found in EKS')"
            )
            await page_until(browser, waiting, "the late cluster waited for")
            screenshot(browser, "system-waiting")
            await asyncio.to_thread(browser.execute_script, APP_LOG, card)

            # It arrives: the system holds every application (paused) at the weights AWS shows.
            await s.arrives("web-2-v2", "web")
            held = " && ".join(
                f'(() => {{ const a = document.querySelector("{app_sel.format(app)}"); '
                "return !!a && !!a.querySelector('.badge.paused') && "
                "a.innerText.includes('→ v2'); })()"
                for app in ("web", "api")
            )
            ready = f"document.querySelector(\"{card} [data-cluster='web-2-v2']\")"
            await page_until(
                browser,
                f"return !!{ready} && {ready}.dataset.ready === 'true' && {held}",
                "every application held on the new set",
            )
            assert await s.weights(alb.listener_arn, 10) == {"web-1-v1": 50, "web-2-v1": 50}
            assert await s.weights(alb.listener_arn, 11) == {"api-v1": 100}

            # Promote the system from its card: okra promote sys.
            clicked = time.time()
            await click_and_confirm_on(
                browser,
                f"{card} > .actions button[data-action='promote']",
                f"Promote system {ns}/sys (every application)?",
            )
            await page_until(browser, text_has("system sys: resumed"), "promote's message")
            done = (
                f'const c = document.querySelector("{card}"); return '
                "!!c && c.dataset.phase === 'Completed' && c.dataset.paused === 'false' && "
                "[...c.querySelectorAll('.application[data-application]')].every((a) => "
                "a.dataset.phase === 'Synced' && "
                "a.querySelector(\"[data-weights='v2 100']\") !== null)"
            )
            await page_until(browser, done, "every application at v2", within=180)
            # Completed: nothing to promote or abort on the system, each said beside its button.
            offered = (
                f'const a = "{card} > .actions";'
                "const b = document.querySelector(`${a} button[data-action=promote]`);"
                "const w = document.querySelector(`${a} .why[data-why=abort]`);"
                "return !!b && b.disabled && !!w && "
                "w.textContent.startsWith('Abort: nothing to abort:')"
            )
            await page_until(browser, offered, "promote and abort disabled, with the reason")
            screenshot(browser, "system")
            marker = await asyncio.to_thread(browser.execute_script, "return window.okraMarker")
            assert marker == "no reload"
            log = await asyncio.to_thread(browser.execute_script, "return window.okraApps")
            checks = await asyncio.to_thread(browser.execute_script, "return window.okraChecks")
        finally:
            board.stop()
        await s.weights_become(alb.listener_arn, 10, {"web-1-v2": 50, "web-2-v2": 50})
        await s.weights_become(alb.listener_arn, 11, {"api-v2": 100})

        # A viewer (okra-viewer's rules) reads the card and is refused its actions by the
        # API server, for the system and for one application alike: the page says so.
        for obj in viewer_role(ns):
            await rt_client.create(obj)
        viewer = Dashboard(
            control_plane.kubeconfig(UNPRIVILEGED), ns, tmp_path / "dashboard-viewer.log"
        )
        try:
            await asyncio.to_thread(browser.get, viewer.url)
            await page_until(browser, done, "the system, read as a viewer")
            for button, question in (
                (
                    f"{card} > .actions button[data-action='pause']",
                    f"Pause system {ns}/sys (every application)?",
                ),
                (
                    f"{app_sel.format('web')} button[data-action='pause']",
                    f"Pause application web of system {ns}/sys?",
                ),
            ):
                await asyncio.to_thread(browser.execute_script, HIDE_NOTICE)
                await click_and_confirm_on(browser, button, question)
                said = "Forbidden: your Kubernetes user may not pause "
                await page_until(browser, text_has(said, "RBAC", "forbidden"), "the refusal")
        finally:
            viewer.stop()
        cells = {c["metadata"]["name"]: c for c in (await rt_client.list(CELL, ns)).items}
        assert "okra.mumo.co/pause" not in (cells["sys"]["metadata"].get("annotations") or {})
        assert "okra.mumo.co/pause" not in (cells["sys-web"]["metadata"].get("annotations") or {})

    # What the open page showed of each application: held at v1 until the click, then its
    # share on v2 walking up step by step (never back), through 50 to 100.
    for app in ("web", "api"):
        shares = [(share(w, "v2"), t) for w, t in log[app]]
        before = [p for p, t in shares if t < clicked]
        after = [p for p, t in shares if t >= clicked]
        assert before, (app, log[app])
        assert set(before) == {0}, (app, log[app])
        walk = [p for p in after if p]
        assert walk == sorted(walk), (app, log[app])
        assert 50 in walk, (app, log[app])
        assert walk[-1] == 100, (app, log[app])
    # each step's checks as the card showed them: web's one per new cluster (its query
    # names the cluster), api's one (a single cluster: one Check)
    for seen in (
        "web: check errors on web-1-v2",
        "web: check errors on web-2-v2",
        "api: check errors",
    ):
        assert f"{seen}: ✓ passed 0" in checks, sorted(checks)
