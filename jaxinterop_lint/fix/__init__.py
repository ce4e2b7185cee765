"""Automatic fixes (``jaxinterop-lint --fix``).

The rules compute each finding's :class:`~jaxinterop_lint.finding.Fix` with the helpers of
:mod:`.edits` and :mod:`.remedies` (libcst transformations of the reported node, turned into
range edits of the linted text).  :mod:`.apply` applies the fixes of one text until none is
left; :mod:`.files` reads, fixes and atomically rewrites files, or prints a diff.

Nothing is imported here eagerly: the rules import :mod:`.remedies` while the engine imports
the rules, and :mod:`.apply` imports the engine.
"""
