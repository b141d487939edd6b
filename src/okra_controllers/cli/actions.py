"""What `okra promote`, `abort`, `retry` and `set version` write, decided by pure
functions from the objects as read, so every rule is unit-tested.

The Cell controller reads two annotations (see `okra_controllers.cell.plan`):

- `okra.mumo.co/promote: "<rolloutId>/<stepIndex>"` ends the pause, or accepts
  the inconclusive analysis, at that step of that rollout; `"<rolloutId>/full"`
  skips every remaining step. Naming the rollout and the step makes a stale
  annotation harmless: it never promotes a later step or a later rollout.
- `okra.mumo.co/abort: "<rolloutId>"` sends all traffic back to the stable
  version and holds; removing it (`okra retry`) starts the rollout over.
- `okra.mumo.co/pause: "true"` (`okra pause`) holds the rollout at its current
  weights before its next step, as `spec.paused` does in Argo Rollouts; `okra
  promote` removes it (and only that: the next promote moves a step).

A timed or indefinite pause is also ended at its source: `spec.cancelled` on
the step's Pause, so the pause shows `Cancelled` rather than waiting forever.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from okra_controllers.api.v1alpha1.analysis import Argument
from okra_controllers.api.v1alpha1.cell import Cell, CellStatus
from okra_controllers.api.v1alpha1.strategy import CanaryStep
from okra_controllers.api.validation import validated
from okra_controllers.cell.observe import ABORT, PAUSED, PROMOTE
from okra_controllers.cell.plan import run_name
from okra_controllers.cell.versions import parse_version
from okra_controllers.cli.kube import CliError
from okra_controllers.cli.render import describe_step, step_label

Obj = dict[str, Any]


def annotation_patch(key: str, value: str | None) -> Obj:
    """A merge patch setting (or, with None, removing) one annotation."""
    return {"metadata": {"annotations": {key: value}}}


def version_patch(version: str | None) -> Obj:
    """A merge patch setting (or, with None, removing) `spec.version`."""
    if version is not None and parse_version(version) is None:
        raise CliError(f"{version!r} is not a version (expected semver like v1.2.3, 1.2 or 2)")
    return {"spec": {"version": version}}


@dataclass(frozen=True)
class Rollout:
    name: str
    rollout_id: str
    stable: str | None
    canary: str
    index: int
    steps: list[CanaryStep]
    status: CellStatus
    annotations: dict[str, str]

    @property
    def aborted(self) -> bool:
        return bool(self.status.aborted) or self.annotations.get(ABORT) == self.rollout_id

    def where(self) -> str:
        if self.index >= len(self.steps):
            return f"past the last step ({len(self.steps)}/{len(self.steps)})"
        step = self.steps[self.index]
        return f"step {step_label(self.index, len(self.steps))} ({describe_step(step)})"


def rollout(cell: Obj) -> Rollout:
    """The rollout in progress; CliError when there is none."""
    return rollout_of(Cell.model_validate(cell))


def rollout_of(model: Cell) -> Rollout:
    """The rollout in progress of the Cell as read; CliError when there is none."""
    st = model.status or CellStatus()
    name = model.metadata.name
    if model.spec.applications is not None:
        cells = (
            ", ".join(a.cell for a in st.applications or [] if a.cell) or f"{name}-<application>"
        )
        raise CliError(
            f"cell {name} is a system: its applications roll out through their own Cells "
            f"({cells}); name one of them"
        )
    if not st.rollout_id or not st.canary_version:
        state = f"phase {st.phase}, {st.health}" if st.phase else "not reconciled yet"
        if st.message:
            state += f": {st.message}"
        raise CliError(f"cell {name} has no rollout in progress ({state})")
    canary = model.spec.update_strategy.canary
    return Rollout(
        name=name,
        rollout_id=st.rollout_id,
        stable=st.stable_version,
        canary=st.canary_version,
        index=st.current_step_index or 0,
        steps=list(canary.steps) if canary else [],
        status=st,
        annotations=dict(model.metadata.annotations),
    )


@dataclass(frozen=True)
class Promote:
    annotation: str
    """The value for okra.mumo.co/promote."""
    pause: str | None
    """The Pause to cancel, if the rollout is at a pause step."""
    summary: str


def plan_promote(cell: Obj, *, full: bool = False) -> Promote:
    return promote_plan(rollout(cell), full=full)


def promote_plan(r: Rollout, *, full: bool = False) -> Promote:
    """What promoting the rollout `r` writes; CliError where it would not act."""
    if r.aborted:
        raise CliError(
            f"the rollout of {r.canary} on cell {r.name} is aborted; okra retry {r.name} resumes it"
        )
    at_pause = r.index < len(r.steps) and r.steps[r.index].pause is not None
    pause = run_name(r.name, r.canary, r.rollout_id, f"pause-{r.index}") if at_pause else None
    if full:
        return Promote(
            f"{r.rollout_id}/full",
            pause,
            f"promoting {r.canary} fully: skipping from {r.where()} to 100%",
        )
    if r.index >= len(r.steps):
        raise CliError(
            f"the rollout of {r.canary} on cell {r.name} is past its last step; it completes "
            f"when AWS shows all traffic on {r.canary}"
        )
    if at_pause:
        return Promote(f"{r.rollout_id}/{r.index}", pause, f"ending the pause at {r.where()}")
    if r.status.paused_reason == "Inconclusive":
        return Promote(
            f"{r.rollout_id}/{r.index}",
            None,
            f"accepting the inconclusive analysis at {r.where()}",
        )
    held = r.status.traffic
    if (
        held is not None
        and held.step == f"{r.rollout_id}/{r.index}"
        and held.verdict != "Confirmed"
    ):
        return Promote(
            f"{r.rollout_id}/{r.index}",
            None,
            f"accepting the traffic at {r.where()} unconfirmed ({held.message})",
        )
    raise CliError(
        f"nothing to promote on cell {r.name}: the rollout of {r.canary} is at {r.where()}, "
        "which is neither a pause, an inconclusive analysis nor traffic not yet confirmed; "
        "okra promote --full skips every remaining step"
    )


def plan_abort(cell: Obj) -> str:
    """The value for okra.mumo.co/abort: the rollout in progress."""
    r = rollout(cell)
    return r.rollout_id


@dataclass(frozen=True)
class Retry:
    abort: str | None
    """The abort annotation to remove (its current value), if set."""
    unblock: list[Obj]
    """Blocklist items to remove."""
    keep: list[Obj]
    """Blocklist items that stay."""

    @property
    def nothing(self) -> bool:
        return self.abort is None and not self.unblock


def _same_version(a: str, b: str) -> bool:
    pa, pb = parse_version(a), parse_version(b)
    return a == b or (pa is not None and pb is not None and pa.parsed == pb.parsed)


def _newer(version: str, than: str | None) -> bool:
    if than is None:
        return True
    v, t = parse_version(version), parse_version(than)
    return v is not None and t is not None and v.parsed > t.parsed


def plan_retry(cell: Obj, blocklist: Obj | None, version: str | None = None) -> Retry:
    """Remove the abort annotation, and unblock `version` (default: every blocked
    version newer than the stable one)."""
    meta = cell.get("metadata") or {}
    stable = (cell.get("status") or {}).get("stableVersion")
    items: list[Obj] = list(((blocklist or {}).get("spec") or {}).get("items") or [])
    abort = (meta.get("annotations") or {}).get(ABORT)
    if version is not None:
        unblock = [i for i in items if _same_version(str(i.get("version")), version)]
        if not unblock and abort is None:
            blocked = ", ".join(str(i.get("version")) for i in items) or "none"
            raise CliError(
                f"version {version} is not blocked for cell {meta.get('name')} "
                f"(blocked: {blocked}) and no rollout is aborted"
            )
    else:
        unblock = [i for i in items if _newer(str(i.get("version")), stable)]
    keep = [i for i in items if i not in unblock]
    return Retry(abort, unblock, keep)


def nothing_to_retry(cell: Obj) -> str:
    """What `okra retry` says of a Cell with no aborted rollout and no blocked version newer
    than its stable one."""
    stable = (cell.get("status") or {}).get("stableVersion") or "unknown"
    return (
        "nothing to retry (no rollout is aborted and no blocked version is newer than the "
        f"stable version {stable})"
    )


def already_aborted(r: Rollout) -> str:
    """What `okra abort` says of a rollout already aborted."""
    return f"the rollout of {r.canary} is already aborted (okra retry resumes)"


def cell_actions(cell: Obj, blocklist: Obj | None) -> dict[str, str | None]:
    """For each action a Cell offers (`promote`, `promote-full`, `abort`, `retry`): None
    where it would act now, else why not, in the words `okra` says it in. Pause and resume
    always act (one of the two, as the Cell is paused or not)."""
    meta = _meta(cell)
    model, invalid = validated(Cell, cell)
    if model is None:
        return dict.fromkeys(CELL_ACTIONS, f"cell {meta.get('name')} cannot be read: {invalid}")
    retry = nothing_to_retry(cell) if plan_retry(cell, blocklist).nothing else None
    # a paused Cell's promote resumes it (and only that), as `okra promote` does
    resumes = (meta.get("annotations") or {}).get(PAUSED) is not None
    try:
        r = rollout_of(model)
    except CliError as e:
        return {
            "promote": None if resumes else str(e),
            "promote-full": str(e),
            "abort": str(e),
            "retry": retry,
        }

    def refused(full: bool) -> str | None:
        try:
            promote_plan(r, full=full)
        except CliError as e:
            return str(e)
        return None

    return {
        "promote": None if resumes else refused(False),
        "promote-full": refused(True),
        "abort": already_aborted(r) if r.aborted else None,
        "retry": retry,
    }


CELL_ACTIONS = ("promote", "promote-full", "abort", "retry")
"""The Cell actions that can have nothing to do (`cell_actions`)."""


def _meta(obj: Obj) -> Obj:
    meta: Obj = obj.get("metadata") or {}
    return meta


def parse_arguments(pairs: Iterable[str]) -> list[Argument]:
    """`--arg name=value` flags as AnalysisRun arguments (the last of a name wins)."""
    out: dict[str, Argument] = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name:
            raise CliError(f"--arg {pair!r}: expected NAME=VALUE")
        out[name] = Argument(name=name, value=value)
    return list(out.values())


__all__ = [
    "ABORT",
    "PAUSED",
    "PROMOTE",
    "Promote",
    "Retry",
    "Rollout",
    "annotation_patch",
    "parse_arguments",
    "plan_abort",
    "plan_promote",
    "plan_retry",
    "rollout",
    "version_patch",
]
