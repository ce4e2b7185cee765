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
    findings, handled, seen = [], [], set()
    for event in ma.events:
        if isinstance(event, SinkEvent) and verdict(event)[0] == "handled":
            handled.append((path, ctx.line(event.node)))
        for rule in rules:
            f = rule.check(event, ctx)
            if f is not None and (f.line, f.column, f.code) not in seen:
                seen.add((f.line, f.column, f.code))
                findings.append(f)
    return findings, handled
