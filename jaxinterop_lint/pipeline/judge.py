"""Stage 5, rules: every rule over the events of one module analysis, giving the raw
findings (before selection and ``noqa``) and the sinks judged handled."""
from __future__ import annotations


def raw_findings(ma, path: str):
    """Run every rule over the events of ``ma``: ``(findings, handled (path, line) pairs)``.
    ``path`` is the file's path in the findings."""
    from ..analysis.events import SinkEvent
    from ..rules import ALL_RULES, RuleContext
    from ..rules.base import verdict

    ctx = RuleContext(ma, path)
    rules = [r() for r in ALL_RULES]
    findings, handled, seen = [], [], {}
    for event in ma.events:
        if isinstance(event, SinkEvent) and verdict(event)[0] == "handled":
            handled.append((path, ctx.line(event.node)))
        for rule in rules:
            f = rule.check(event, ctx)
            if f is None:
                continue
            key = (f.line, f.column, f.code)
            if key not in seen:
                seen[key] = len(findings)
                findings.append(f)
            else:
                findings[seen[key]] = merged(findings[seen[key]], f)
    return findings, handled


def merged(first, other):
    """``first`` (a finding of a helper's sink in one calling context) with the calling
    context of ``other``, the same finding in another context, added: its ``callers`` join
    the first's, and the message names where it enters (``...; also when called from b()
    at line 13``).  A finding without a context (its own sink) is kept as it is."""
    import dataclasses

    entered = other.extra.get("entered")
    if entered is None or "entered" not in first.extra:
        return first
    extra = dict(first.extra)
    also = list(extra.get("also", ()))
    if entered == extra["entered"] or entered in also:
        return first
    also.append(entered)
    extra["also"] = tuple(also)
    extra["callers"] = tuple(dict.fromkeys((*first.extra.get("callers", ()), *other.extra.get("callers", ()))))
    base = first.message.split(_ALSO, 1)[0]
    named = ", ".join(also[:_NAMED]) + (f" and {len(also) - _NAMED} more" if len(also) > _NAMED else "")
    # the first's fix as it is (a deferred fix stays deferred: replace would compute it)
    return dataclasses.replace(first, message=f"{base}{_ALSO}{named}", extra=extra,
                               fix=first.__dict__.get("_fix"))


_ALSO = "; also when called from "
_NAMED = 3      # the other calling contexts a message names (``extra["also"]`` has them all)
