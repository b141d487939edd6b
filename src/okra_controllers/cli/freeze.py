"""`okra freeze`, `okra unfreeze`, `okra get freezes`: stop the line, and start it again.

`okra freeze --reason TEXT [-l SELECTOR] [--until TIME|DURATION]` makes a manual Freeze in
the namespace, with the user the API server says this is (a SelfSubjectReview) as author;
with `--cluster-wide [--namespace-selector SELECTOR]` a ClusterFreeze instead, for every
namespace (or those whose labels match). `okra unfreeze [--cluster-wide] [NAME]` deletes it
(the only one when no NAME is given); `okra get freezes` shows each Freeze and ClusterFreeze
(in a namespace: the ClusterFreezes that select it), whether it applies now and until when,
or when it next starts. The Cells and ProgressiveRollouts it selects hold at their next step
boundary.
"""

from __future__ import annotations

import argparse
import datetime
from typing import Any

from okra_controllers.analysis.duration import parse_duration
from okra_controllers.api.kinds import CLUSTER_FREEZE, FREEZE, NAMESPACE
from okra_controllers.api.v1alpha1.common import API_VERSION
from okra_controllers.cli.get import dump
from okra_controllers.cli.kube import CliError, Context
from okra_controllers.freeze import Hold, Invalid, applies, hold_at, next_start, parse, when
from okra_controllers.freeze.hold import selects_namespace
from okra_runtime.client import Client
from okra_runtime.errors import ForbiddenError, NoKindMatchError, NotFoundError
from okra_runtime.labels import Selector, parse_selector
from okra_runtime.timeutil import parse_time

Obj = dict[str, Any]


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


def selector_spec(text: str | None, flag: str = "-l") -> Obj:
    """`-l app=web,tier!=db,env in (a,b),!legacy` as a Freeze's `selector` (or, `flag`
    `--namespace-selector`, a ClusterFreeze's `namespaceSelector`)."""
    if not text:
        return {}
    try:
        sel: Selector = parse_selector(text)
    except ValueError as e:
        raise CliError(f"{flag}: {e}") from e
    labels: dict[str, str] = {}
    exprs: list[Obj] = []
    for r in sel.requirements:
        if r.op == "In" and len(r.values) == 1 and r.key not in labels:
            labels[r.key] = next(iter(r.values))
            continue
        expr: Obj = {"key": r.key, "operator": r.op}
        if r.op in ("In", "NotIn"):
            expr["values"] = sorted(r.values)
        exprs.append(expr)
    out: Obj = {}
    if labels:
        out["matchLabels"] = labels
    if exprs:
        out["matchExpressions"] = exprs
    return out


def until_of(text: str | None, now: datetime.datetime) -> datetime.datetime | None:
    """`--until`: a time (RFC 3339) or a duration from now (`2h`, `90m`)."""
    if not text:
        return None
    t = parse_time(text)
    if t is None:
        try:
            t = now + datetime.timedelta(seconds=parse_duration(text))
        except ValueError as e:
            raise CliError(
                f"--until {text!r}: neither a time (2026-12-24T18:00:00Z) nor a duration (2h)"
            ) from e
    if t <= now:
        raise CliError(f"--until {text!r} is not in the future")
    return t


async def whoami(ctx: Context) -> str:
    """The user the API server authenticates this client as ("" when it will not say)."""
    return await ctx.whoami() or ""


async def cmd_freeze(ctx: Context, args: argparse.Namespace) -> int:
    now = _now()
    cluster = bool(getattr(args, "cluster_wide", False))
    namespaces_text = getattr(args, "namespace_selector", None)
    if namespaces_text and not cluster:
        raise CliError(
            "--namespace-selector: only with --cluster-wide (a Freeze is in one namespace)"
        )
    namespaces = selector_spec(namespaces_text, "--namespace-selector")
    spec: Obj = {"reason": args.reason}
    author = args.author if args.author is not None else await whoami(ctx)
    if author:
        spec["author"] = author
    selector = selector_spec(args.selector)
    if selector:
        spec["selector"] = selector
    until = until_of(args.until, now)
    if until is not None:
        spec["until"] = when(until)
    if namespaces:
        spec["namespaceSelector"] = namespaces
    kind = "ClusterFreeze" if cluster else "Freeze"
    meta: Obj = {} if cluster else {"namespace": ctx.namespace}
    if args.name:
        meta["name"] = args.name
    else:
        meta["generateName"] = f"{kind.lower()}-"
    made = await ctx.client.create(
        {"apiVersion": API_VERSION, "kind": kind, "metadata": meta, "spec": spec}
    )
    scope = f"-l {args.selector}" if args.selector else "every Cell and ProgressiveRollout"
    if cluster:
        where = f"namespaces {namespaces_text}" if namespaces_text else "every namespace"
    else:
        where = ctx.namespace
    ctx.say(
        f"{kind.lower()} {made['metadata']['name']} in {where} ({scope}) until "
        f"{when(until) if until else 'okra unfreeze'}: {args.reason}"
    )
    return 0


async def cmd_unfreeze(ctx: Context, args: argparse.Namespace) -> int:
    name = args.name
    cluster = bool(getattr(args, "cluster_wide", False))
    kind, gvk = ("ClusterFreeze", CLUSTER_FREEZE) if cluster else ("Freeze", FREEZE)
    namespace = None if cluster else ctx.namespace
    where = "the cluster" if cluster else f"namespace {ctx.namespace}"
    if name is None:
        found = (await ctx.client.list(gvk, namespace)).items
        if len(found) != 1:
            names = ", ".join(sorted(f["metadata"]["name"] for f in found)) or "none"
            raise CliError(f"okra unfreeze NAME: {where} has {len(found)} {kind}s ({names})")
        name = found[0]["metadata"]["name"]
    try:
        await ctx.client.delete(gvk, name, namespace=namespace)
    except NotFoundError as e:
        raise CliError(f"no {kind} {name} in {where}") from e
    ctx.say(f"{kind.lower()} {name} lifted")
    return 0


async def _cluster_freezes(client: Client) -> list[Obj] | None:
    """Every ClusterFreeze; None when this user may not list them (or they are not
    installed)."""
    try:
        return (await client.list(CLUSTER_FREEZE)).items
    except (NoKindMatchError, NotFoundError, ForbiddenError):
        return None


async def _namespace_labels(client: Client, namespace: str) -> dict[str, str] | None:
    """The namespace's labels; None when this user may not read it."""
    try:
        ns = await client.get(NAMESPACE, namespace)
    except (NotFoundError, ForbiddenError):
        return None
    return dict((ns.get("metadata") or {}).get("labels") or {})


async def hold_for(client: Client, obj: Obj, namespace: str) -> Hold | None:
    """The Freezes and ClusterFreezes that hold `obj` now, as the controllers would find
    them (`okra plan`); None when none does or Freezes are not installed."""
    try:
        found = (await client.list(FREEZE, namespace)).items
    except (NoKindMatchError, NotFoundError):
        return None
    parsed = [parse(f, cluster=False) for f in found]
    wide = await _cluster_freezes(client) or []
    ns_labels = await _namespace_labels(client, namespace) if wide else {}
    parsed += [parse(f, cluster=True) for f in wide]
    labels = (obj.get("metadata") or {}).get("labels") or {}
    return hold_at(parsed, namespace, labels, _now(), ns_labels)


def freeze_row(raw: Obj, now: datetime.datetime, cluster: bool = False) -> dict[str, str]:
    """What `okra get freezes` shows of one Freeze or (`cluster`) ClusterFreeze (and `-o
    json` gives): a ClusterFreeze's `namespace` is "" and its `namespaces` what its
    namespaceSelector picks."""
    f = parse(raw, cluster=cluster)
    meta = raw.get("metadata") or {}
    spec = raw.get("spec") or {}
    row = {
        "kind": "ClusterFreeze" if cluster else "Freeze",
        "namespace": "" if cluster else str(meta.get("namespace") or ""),
        "namespaces": _selector_text(spec.get("namespaceSelector")) if cluster else "",
        "name": str(meta.get("name") or ""),
        "reason": str(spec.get("reason") or ""),
        "author": str(spec.get("author") or ""),
        "selector": _selector_text(spec.get("selector")),
        "windows": ", ".join(
            f"{w.get('schedule')} for {w.get('duration')} ({w.get('timeZone', 'UTC')})"
            for w in spec.get("windows") or []
            if isinstance(w, dict)
        )
        or "manual",
    }
    if isinstance(f, Invalid):
        return {**row, "active": "invalid", "until": "fixed", "problem": f.problem}
    span = applies(f.spec, now)
    if span is not None:
        more = "at least " if span.more else ""
        return {**row, "active": "yes", "until": more + when(span.end), "problem": ""}
    nxt = next_start(f.spec, now)
    return {**row, "active": "no", "until": f"next {when(nxt)}" if nxt else "over", "problem": ""}


def _selector_text(sel: Any) -> str:
    if not isinstance(sel, dict) or not sel:
        return "all"
    parts = [f"{k}={v}" for k, v in sorted((sel.get("matchLabels") or {}).items())]
    for e in sel.get("matchExpressions") or []:
        if isinstance(e, dict):
            vals = ",".join(e.get("values") or [])
            parts.append(
                f"{e.get('key')} {e.get('operator')} ({vals})"
                if vals
                else f"{e.get('key')} {e.get('operator')}"
            )
    return ",".join(parts)


def _shown(r: dict[str, str], col: str) -> str:
    """A cell of the table: a ClusterFreeze's name is `clusterfreeze/NAME` and its namespace
    what its namespaceSelector picks (`*`: every namespace)."""
    if r.get("kind") == CLUSTER_FREEZE.kind:
        if col == "name":
            return f"clusterfreeze/{r['name']}"
        if col == "namespace":
            return "*" if r["namespaces"] == "all" else r["namespaces"]
    return r[col]


def render_freezes(rows: list[dict[str, str]], *, namespaces: bool) -> str:
    cols = ["name", "active", "until", "reason", "author", "selector", "windows"]
    if namespaces:
        cols.insert(0, "namespace")
    table = [[c.upper() for c in cols]] + [[_shown(r, c) for c in cols] for r in rows]
    widths = [max(len(line[i]) for line in table) for i in range(len(cols))]
    lines = [
        "  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)).rstrip() for line in table
    ]
    for r in rows:
        if r["problem"]:
            lines.append(f"invalid: {_shown(r, 'name')}: {r['problem']} (it holds until fixed)")
    return "\n".join(lines) + "\n"


async def cmd_get_freezes(ctx: Context, args: argparse.Namespace) -> int:
    found = (await ctx.client.list(FREEZE, ctx.list_namespace)).items
    found.sort(key=lambda f: (f["metadata"].get("namespace", ""), f["metadata"]["name"]))
    now = _now()
    rows = [freeze_row(f, now) for f in found]
    wide = await _cluster_freezes(ctx.client)
    if wide is None:
        ctx.err.write(
            "ClusterFreezes: not readable by this user (okra-viewer bound cluster-wide)\n"
        )
    else:
        labels = None if ctx.all_namespaces else await _namespace_labels(ctx.client, ctx.namespace)
        for raw in sorted(wide, key=lambda f: str(f["metadata"]["name"])):
            if labels is not None and not selects_namespace(
                parse(raw, cluster=True), ctx.namespace, labels
            ):
                continue  # one that does not reach this namespace
            rows.append(freeze_row(raw, now, cluster=True))
    cluster_rows = any(r["kind"] == CLUSTER_FREEZE.kind for r in rows)
    if args.output in ("json", "yaml"):
        ctx.out.write(dump(rows, args.output))
    elif args.output == "name":
        ctx.out.write("".join(f"{r['kind'].lower()}/{r['name']}\n" for r in rows))
    elif not rows:
        ctx.err.write(f"No Freezes found in {ctx.listed_in}.\n")
    else:
        ctx.out.write(render_freezes(rows, namespaces=ctx.all_namespaces or cluster_rows))
    return 0
