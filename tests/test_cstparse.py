"""cstparse.parse_module: libcst's tree, with the collector and the node validation back as
they were once it returns or raises."""
import gc
import os
import threading

import libcst as cst
import pytest
from libcst._nodes.base import CSTNode

from jaxinterop_lint import cstparse
from jaxinterop_lint.cstparse import parse_module, skips_validation

HERE = os.path.dirname(os.path.abspath(__file__))
PACKAGE = os.path.join(os.path.dirname(HERE), "jaxinterop_lint")


def _sources():
    out = []
    for folder, _, files in os.walk(PACKAGE):
        out += [os.path.join(folder, f) for f in sorted(files) if f.endswith(".py")]
    return sorted(out)[:12]


def _unbalanced_name():
    # libcst's Name._validate: "Cannot have left paren without right paren."
    return cst.Name("x", lpar=[cst.LeftParen()])


def test_the_tree_is_libcsts_own():
    for path in _sources():
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
        ours, theirs = parse_module(text), cst.parse_module(text)
        assert ours.code == text, path
        assert ours.deep_equals(theirs), path


@pytest.mark.parametrize("text, error", [("x = (1 +\n 2)\n", None), ("def f(:\n", cst.ParserSyntaxError)])
def test_validation_and_the_collector_are_back_after_a_parse(text, error):
    assert skips_validation()       # libcst 1.x: __post_init__ only validates
    before = CSTNode.__dict__["__post_init__"]
    assert gc.isenabled()
    if error is None:
        parse_module(text)
    else:
        with pytest.raises(error):
            parse_module(text)
    assert CSTNode.__dict__["__post_init__"] is before
    assert gc.isenabled()
    with pytest.raises(cst.CSTValidationError):
        _unbalanced_name()


def test_a_collector_paused_by_the_caller_stays_paused():
    gc.disable()
    try:
        parse_module("y = 1\n")
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_the_validation_is_skipped_during_the_parse_and_only_then(monkeypatch):
    seen = []
    real = cst.parse_module

    def spy(text, *args, **kwargs):
        seen.append((gc.isenabled(), CSTNode.__dict__["__post_init__"] is cstparse._noop_post_init))
        return real(text, *args, **kwargs)

    monkeypatch.setattr(cst, "parse_module", spy)
    parse_module("z = 2\n")
    assert seen == [(False, True)]


def test_a_post_init_that_does_more_than_validate_is_kept(monkeypatch):
    calls = []

    def post_init(self):
        calls.append(type(self).__name__)
        self._validate()

    monkeypatch.setattr(CSTNode, "__post_init__", post_init)
    assert not skips_validation()
    module = parse_module("w = 3\n")
    assert module.code == "w = 3\n"
    assert "Module" in calls and "Name" in calls     # libcst's method ran for each node
    assert CSTNode.__dict__["__post_init__"] is post_init


def test_parses_in_two_threads_restore_once_both_end():
    before = CSTNode.__dict__["__post_init__"]
    text = "".join(f"v{i} = f({i}, [{i}, {i}])\n" for i in range(600))
    errors = []

    def work():
        try:
            for _ in range(2):
                assert parse_module(text).code == text
        except Exception as exc:     # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert cstparse._depth == 0
    assert CSTNode.__dict__["__post_init__"] is before
    assert gc.isenabled()
