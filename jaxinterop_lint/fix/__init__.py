"""Automatic fixes (``jaxinterop-lint --fix``): applying them and writing the files.

The rules compute each finding's :class:`~jaxinterop_lint.finding.Fix` with the helpers of
:mod:`jaxinterop_lint.rules.edits` and :mod:`jaxinterop_lint.rules.remedies` (libcst
transformations of the reported node, turned into range edits of the linted text), below
the engine.  This package sits above it: :mod:`.apply` applies the fixes of one text until
none is left (linting again through the engine); :mod:`.files` reads, fixes and atomically
rewrites files (:mod:`.writer`), or prints a diff; :mod:`.report` summarises a run.
"""
