"""``jaxinterop-lint server``, driven over stdio by pygls' own LSP client: diagnostics on open
and change with provenance as related information, quick fixes as code actions, fix-all,
and the command line's cache filled and shared."""
from __future__ import annotations

import asyncio
import sys
import textwrap

import pytest
from lsprotocol import types
from pygls.lsp.client import LanguageClient

from conftest import run_cli

MAKE = textwrap.dedent("""\
    import jax
    from jax.sharding import NamedSharding, PartitionSpec as P


    def batch(x, mesh):
        return jax.device_put(x, NamedSharding(mesh, P("x")))
    """)
MAIN = textwrap.dedent("""\
    import torch
    from pkg.make import batch


    def export(x, mesh):
        return torch.from_dlpack(batch(x, mesh))


    def first(arr):
        return arr.device_buffer
    """)


@pytest.fixture
def project(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "p"\n')
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "make.py").write_text(MAKE)
    (tmp_path / "main.py").write_text(MAIN)
    return tmp_path


def apply(text: str, edit: types.TextEdit) -> str:
    """Apply one LSP text edit (ASCII text: characters are UTF-16 units)."""
    lines = text.splitlines(keepends=True)

    def offset(pos):
        return sum(len(ln) for ln in lines[:pos.line]) + pos.character

    return text[:offset(edit.range.start)] + edit.new_text + text[offset(edit.range.end):]


class Session:
    """A pygls client talking to ``python -m jaxinterop_lint server``."""

    def __init__(self, cwd):
        self.client = LanguageClient("test-client", "1")
        self.cwd = cwd
        self.published: dict = {}
        self.events = asyncio.Queue()

        @self.client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        def on_diagnostics(params: types.PublishDiagnosticsParams):
            self.published[params.uri] = params.diagnostics
            self.events.put_nowait(params)

    async def start(self):
        await self.client.start_io(sys.executable, "-m", "jaxinterop_lint", "server", cwd=str(self.cwd))
        result = await asyncio.wait_for(self.client.initialize_async(types.InitializeParams(
            capabilities=types.ClientCapabilities(), root_uri=self.cwd.as_uri())), 60)
        self.client.initialized(types.InitializedParams())
        return result

    async def diagnostics(self, uri: str, timeout: float = 120) -> list:
        while True:
            params = await asyncio.wait_for(self.events.get(), timeout)
            if params.uri == uri:
                return params.diagnostics

    async def stop(self):
        await asyncio.wait_for(self.client.shutdown_async(None), 30)
        self.client.exit(None)
        await asyncio.wait_for(self.client.stop(), 30)


def test_server_diagnostics_quick_fixes_and_the_shared_cache(project):
    async def scenario():
        s = Session(project)
        init = await s.start()
        assert init.server_info.name == "jaxinterop-lint"
        uri = (project / "main.py").as_uri()
        s.client.text_document_did_open(types.DidOpenTextDocumentParams(text_document=types.TextDocumentItem(
            uri=uri, language_id="python", version=1, text=MAIN)))
        diags = await s.diagnostics(uri)
        by_code = {d.code: d for d in diags}
        assert sorted(by_code) == ["JXI002", "JXI005"]
        export = by_code["JXI002"]
        assert export.range.start == types.Position(line=5, character=11)   # main.py:6:12 in the CLI
        assert export.source == "jaxinterop-lint" and export.severity == types.DiagnosticSeverity.Warning
        assert export.code_description.href.endswith("docs/rules/JXI002.md")
        related = export.related_information
        assert related and related[0].location.uri == (project / "pkg" / "make.py").as_uri()
        assert related[0].location.range.start.line == 5                       # make.py line 6
        assert "NamedSharding" in related[0].message
        assert related[-1].location.uri == uri

        # a quick fix for JXI005, and fix-all, as code actions
        removed = by_code["JXI005"]
        actions = await asyncio.wait_for(s.client.text_document_code_action_async(types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri), range=removed.range,
            context=types.CodeActionContext(diagnostics=[removed]))), 60)
        titles = [a.title for a in actions]
        fix = next(a for a in actions if a.kind == types.CodeActionKind.QuickFix and "JXI005" in a.title
                   and "noqa" not in a.title)
        assert fix.is_preferred
        (edit,) = fix.edit.changes[uri]
        assert apply(MAIN, edit) == MAIN.replace("arr.device_buffer", "arr.addressable_data(0)")
        assert any("noqa: JXI005" in t for t in titles)
        fix_all = next(a for a in actions if a.kind == "source.fixAll.jaxinterop-lint")
        assert apply(MAIN, fix_all.edit.changes[uri][0]) == MAIN.replace("arr.device_buffer",
                                                                         "arr.addressable_data(0)")

        # diagnostics follow the buffer as it changes (full-text change)
        fixed = MAIN.replace("torch.from_dlpack(batch(x, mesh))", "batch(x, mesh)")
        s.client.text_document_did_change(types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=fixed)]))
        diags = await s.diagnostics(uri)
        assert [d.code for d in diags] == ["JXI005"]
        await s.stop()

    asyncio.run(scenario())
    # The server reads and fills the command line's cache (for what the buffers needed: it
    # never analyses the whole project): a CLI run does not analyse main.py again, and a
    # second one analyses nothing.
    from jaxinterop_lint import lint_paths, pyproject

    cfg = pyproject.overlay(pyproject.load([str(project)]))   # the command line's configuration
    warm = lint_paths([str(project)], cfg, use_cache=True)
    assert str(project / "main.py") not in warm.analysed_paths, warm.analysed_paths
    assert {f.code for f in warm.findings} == {"JXI002", "JXI005"}
    assert lint_paths([str(project)], cfg, use_cache=True).analysed == 0
    r = run_cli("check", "main.py", cwd=project)
    assert "main.py:6:12: JXI002" in r.stdout


def test_server_help_does_not_start_it():
    r = run_cli("server", "--help")
    assert r.returncode == 0 and "language server" in r.stdout
    r = run_cli("server", "--stdio-not-an-option")
    assert r.returncode == 2 and "unrecognized arguments" in r.stderr
