"""``jaxinterop-lint server``: a language server (LSP over standard input and output) built on
``pygls``.

- Diagnostics on open, change and save: the findings of the buffer's text, linted as the
  command line lints the file (its ``pyproject.toml``, its project's modules across imports),
  each with its provenance as related information and its rule page as the code's link.
- Code actions: each finding's fix as a quick fix (safe fixes preferred; unsafe ones say so),
  ``# noqa: CODE`` for the line, and ``source.fixAll.jaxinterop-lint`` (the safe fixes of
  the whole buffer, as ``--fix``).
- The project's cache is the command line's: the first buffer of a project lints the
  project through the engine with the cache on (filling ``.jaxinterop_lint_cache/``, or
  reading it when the command line already did), and the buffers are linted against the
  module summaries kept there.  A save drops the project's state, so the next lint sees
  the saved module.

The conversion from findings to LSP records is in :mod:`.lsp_convert`; this module only
wires it into ``pygls`` (``pip install 'jaxinterop-lint[server]'``).
"""
from __future__ import annotations

import argparse
import sys
from typing import Optional

from . import __version__


def server_parser() -> argparse.ArgumentParser:
    """The parser of ``jaxinterop-lint server``."""
    return argparse.ArgumentParser(
        prog="jaxinterop-lint server",
        description="Run the jaxinterop-lint language server on standard input and output (LSP): "
                    "diagnostics with provenance, quick fixes, the command line's cache.  Editors "
                    "start it; the README's 'Using it in a project' section (docs/integration.md in the "
                    "source repository) shows the VS Code, Neovim and Helix setup.")


class Linter:
    """Lints editor buffers as the command line lints files, one project state per project
    root (configuration, module summaries from the shared cache)."""

    def __init__(self):
        self._projects: dict = {}

    def config_for(self, path: str):
        """The configuration of ``path`` as the command line builds it with no options
        (the nearest ``pyproject.toml`` with the table).  Raises ConfigError."""
        from . import pyproject

        return pyproject.overlay(pyproject.load([path]))

    def project_for(self, path: str, cfg):
        """The session of ``path``'s project (None outside a project: no marker at its root),
        reading and filling the command line's cache (:class:`~jaxinterop_lint.pipeline.run.Session`):
        a buffer's analysis needs only its own module and those it reaches."""
        from .pipeline.modules import find_root, has_marker
        from .pipeline.run import Session

        root = find_root([path])
        if not has_marker(root):
            return None
        key = (root, repr(cfg))
        session = self._projects.get(key)
        if session is None:
            session = self._projects[key] = Session(root, cfg, use_cache=True)
        return session

    def forget(self, path: str) -> None:
        """Save and drop the session of ``path``'s project (after a save of a buffer: the next
        lint reads the saved module again)."""
        from .pipeline.modules import find_root

        root = find_root([path])
        for key in [k for k in self._projects if k[0] == root]:
            self._projects.pop(key).save()

    def save_all(self) -> None:
        """Write what every session stored (at shutdown)."""
        for session in self._projects.values():
            session.save()

    def lint(self, path: str, text: str):
        """``(FileResult, Config)`` of the buffer ``text`` of the file ``path``.  A bad
        configuration is the result's error (line 1)."""
        from .config import ConfigError
        from .engine import FileResult, SourceError
        from .fix.apply import lint_text

        try:
            cfg = self.config_for(path)
        except ConfigError as exc:
            return FileResult(path, error=SourceError(f"configuration: {exc}", 1, 0)), None
        return lint_text(text, path, cfg, self.project_for(path, cfg)), cfg


def build_server():
    """The ``pygls`` server with its features registered.  Raises ImportError without pygls."""
    from lsprotocol import types
    from pygls.lsp.server import LanguageServer

    from . import lsp_convert as conv

    server = LanguageServer("jaxinterop-lint", __version__,
                            text_document_sync_kind=types.TextDocumentSyncKind.Incremental)
    linter = Linter()
    last: dict = {}   # uri -> (version, text, findings)

    def publish(uri: str) -> None:
        doc = server.workspace.get_text_document(uri)
        path = conv.uri_to_path(uri)
        if path is None:
            return
        result, _ = linter.lint(path, doc.source)
        last[uri] = (doc.version, doc.source, result.findings)
        diagnostics = conv.diagnostics(result, doc.lines, doc.position_codec)
        server.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=uri, diagnostics=diagnostics, version=doc.version))

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(params: types.DidOpenTextDocumentParams):
        publish(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(params: types.DidChangeTextDocumentParams):
        publish(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE)
    def did_save(params: types.DidSaveTextDocumentParams):
        path = conv.uri_to_path(params.text_document.uri)
        if path is not None:
            linter.forget(path)
        for uri in list(last):
            publish(uri)

    @server.feature(types.SHUTDOWN)
    def shutdown(params=None):
        linter.save_all()

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(params: types.DidCloseTextDocumentParams):
        last.pop(params.text_document.uri, None)
        server.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=params.text_document.uri, diagnostics=[]))

    @server.feature(types.TEXT_DOCUMENT_CODE_ACTION, types.CodeActionOptions(
        code_action_kinds=[types.CodeActionKind.QuickFix, conv.FIX_ALL_KIND]))
    def code_action(params: types.CodeActionParams):
        uri = params.text_document.uri
        doc = server.workspace.get_text_document(uri)
        path = conv.uri_to_path(uri)
        if path is None:
            return []
        entry = last.get(uri)
        if entry is None or entry[1] != doc.source:
            publish(uri)
            entry = last[uri]
        _, text, findings = entry
        wanted = params.context.only
        actions = []
        if not wanted or any(k.startswith(types.CodeActionKind.QuickFix) for k in wanted):
            actions += conv.quick_fixes(uri, text, findings, params.range, doc.lines, doc.position_codec)
        if not wanted or any(conv.FIX_ALL_KIND.startswith(k) for k in wanted):
            fix_all = conv.fix_all(uri, path, text, linter, doc.lines, doc.position_codec)
            if fix_all is not None:
                actions.append(fix_all)
        return actions

    return server


def server_main(argv: list) -> int:
    """``jaxinterop-lint server``: serve LSP on standard input/output until the client
    exits.  Exit status 2 (one line) when pygls is not installed."""
    server_parser().parse_args(argv)
    try:
        server = build_server()
    except ImportError as exc:
        print(f"jaxinterop-lint: error: the language server needs pygls and lsprotocol "
              f"(pip install 'jaxinterop-lint[server]'): {exc}", file=sys.stderr)
        return 2
    server.start_io()
    return 0


def main(argv: Optional[list] = None) -> int:  # pragma: no cover - `python -m jaxinterop_lint.server`
    """Run the server (same as ``jaxinterop-lint server``)."""
    return server_main(sys.argv[1:] if argv is None else argv)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
