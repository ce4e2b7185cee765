"""The run pipeline, one module per stage; each imports only the stages below it (checked by
the ``import-linter`` contracts in ``pyproject.toml``):

1. :mod:`.discover`  the Python files under the given paths (excludes, ``.gitignore``)
2. :mod:`.read`      one read of each file, the hash of what was read, the stat shortcut
3. :mod:`.plan`      cheap facts of each text and the import graph: which files are parsed
   (names that carry: :mod:`.carriers`; the facts: :mod:`.facts`; the text scanners
   they are read with: :mod:`.scan`, :mod:`.toplevel`)
4. :mod:`.analyse`   the one libcst parse of a planned file and its module analysis
5. :mod:`.judge`     the rules over the analysis' events: raw findings
   :mod:`.pool`      stages 4-5 for many files, in this process or in worker processes
6. :mod:`.select`    the rule selection and ``noqa``: what is reported
7. :mod:`.run`       the session of one project that drives the stages
   (:mod:`.session`; its parts: :mod:`.analyses`, :mod:`.contexts`, :mod:`.results_store`;
   the store key: :mod:`.runkey`)

Below all of them: :mod:`.store` (the cache, plain data; its per-user key and MAC:
:mod:`.storekey`), :mod:`.results` (the records and
their plain-data form), :mod:`.modules` (module names and project roots), :mod:`.words`
(the word lists derived from the API tables) and :mod:`.masking`.  Reporting
(:mod:`jaxinterop_lint.report`) and fixing (:mod:`jaxinterop_lint.fix`) sit above, behind
:mod:`jaxinterop_lint.engine`.
"""
