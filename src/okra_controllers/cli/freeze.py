"""`okra freeze`, `okra unfreeze`, `okra get freezes`: stop the line, and start it again.

`okra freeze --reason TEXT [-l SELECTOR] [--until TIME|DURATION]` makes a manual Freeze in
the namespace, with the user the API server says this is (a SelfSubjectReview) as author;
`okra unfreeze [NAME]` deletes it (the only Freeze of the namespace when no NAME is given);
`okra get freezes` shows each Freeze, whether it applies now and until when, or when it
next starts. The Cells and ProgressiveRollouts it selects hold at their next step boundary.
"""

from __future__ import annotations

import argparse
import datetime
from typing import Any

from okra_controllers.analysis.duration import parse_duration
from okra_controllers.api.kinds import FREEZE
from okra_controllers.api.v1alpha1.common import API_VERSION
from okra_controllers.cli.get import dump
from okra_controllers.cli.kube import CliError, Context
from okra_controllers.freeze import Hold, Invalid, applies, hold_at, next_start, parse, when
from okra_runtime.client import Client
from okra_runtime.errors import ApiError, NoKindMatchError, NotFoundError
from okra_runtime.labels import Selector, parse_selector
from okra_runtime.timeutil import parse_time

Obj = dict[str, Any]


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


def selector_spec(text: str | None) -> Obj:
    """`-l app=web,tier!=db,env in (a,b),!legacy` as a Freeze's `selector`."""
    if not text:
        return {}
    try:
        sel: Selector = parse_selector(text)
    except ValueError as e:
        raise CliError(f"-l: {e}") from e
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
    review = {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}
    try:
        out = await ctx.client.create(review)
    except (ApiError, LookupError, ValueError):
        return ""
    name = ((out.get("status") or {}).get("userInfo") or {}).get("username")
    return name if isinstance(name, str) else ""


async def cmd_freeze(ctx: Context, args: argparse.Namespace) -> int:
    now = _now()
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
    meta: Obj = {"namespace": ctx.namespace}
    if args.name:
        meta["name"] = args.name
    else:
        meta["generateName"] = "freeze-"
    made = await ctx.client.create(
        {"apiVersion": API_VERSION, "kind": "Freeze", "metadata": meta, "spec": spec}
    )
    scope = f"-l {args.selector}" if args.selector else "every Cell and ProgressiveRollout"
    ctx.say(
        f"freeze {made['metadata']['name']} in {ctx.namespace} ({scope}) until "
        f"{when(until) if until else 'okra unfreeze'}: {args.reason}"
    )
    return 0


async def cmd_unfreeze(ctx: Context, args: argparse.Namespace) -> int:
    name = args.name
    if name is None:
        found = (await ctx.client.list(FREEZE, ctx.namespace)).items
        if len(found) != 1:
            names = ", ".join(sorted(f["metadata"]["name"] for f in found)) or "none"
            raise CliError(
                f"okra unfreeze NAME: namespace {ctx.namespace} has {len(found)} Freezes ({names})"
            )
        name = found[0]["metadata"]["name"]
    try:
        await ctx.client.delete(FREEZE, name, namespace=ctx.namespace)
    except NotFoundError as e:
        raise CliError(f"no Freeze {name} in namespace {ctx.namespace}") from e
    ctx.say(f"freeze {name} lifted")
    return 0


async def hold_for(client: Client, obj: Obj, namespace: str) -> Hold | None:
    """The Freezes that hold `obj` now, as the controllers would find them (`okra plan`);
    None when none does or Freezes are not installed."""
    try:
        found = (await client.list(FREEZE, namespace)).items
    except (NoKindMatchError, NotFoundError):
        return None
    labels = (obj.get("metadata") or {}).get("labels") or {}
    return hold_at([parse(f) for f in found], namespace, labels, _now())


def freeze_row(raw: Obj, now: datetime.datetime) -> dict[str, str]:
    """What `okra get freezes` shows of one Freeze (and `-o json` gives)."""
    f = parse(raw)
    meta = raw.get("metadata") or {}
    spec = raw.get("spec") or {}
    row = {
        "namespace": str(meta.get("namespace") or ""),
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


def render_freezes(rows: list[dict[str, str]], *, namespaces: bool) -> str:
    cols = ["name", "active", "until", "reason", "author", "selector", "windows"]
    if namespaces:
        cols.insert(0, "namespace")
    table = [[c.upper() for c in cols]] + [[r[c] for c in cols] for r in rows]
    widths = [max(len(line[i]) for line in table) for i in range(len(cols))]
    lines = [
        "  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)).rstrip() for line in table
    ]
    for r in rows:
        if r["problem"]:
            lines.append(f"invalid: {r['name']}: {r['problem']} (it holds until fixed)")
    return "\n".join(lines) + "\n"


async def cmd_get_freezes(ctx: Context, args: argparse.Namespace) -> int:
    found = (await ctx.client.list(FREEZE, ctx.list_namespace)).items
    found.sort(key=lambda f: (f["metadata"].get("namespace", ""), f["metadata"]["name"]))
    rows = [freeze_row(f, _now()) for f in found]
    if args.output in ("json", "yaml"):
        ctx.out.write(dump(rows, args.output))
    elif args.output == "name":
        ctx.out.write("".join(f"freeze/{r['name']}\n" for r in rows))
    elif not rows:
        in_ = "any namespace" if ctx.all_namespaces else f"namespace {ctx.namespace}"
        ctx.err.write(f"No Freezes found in {in_}.\n")
    else:
        ctx.out.write(render_freezes(rows, namespaces=ctx.all_namespaces))
    return 0
