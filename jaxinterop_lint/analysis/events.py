"""What the provenance walk observes, for the rules to judge.

The walk does not decide codes: it records each interop export with the abstract value that
reaches it and the context (enclosing ``try`` handlers, function), each use of a removed API
and each copying export of an FFI buffer.  Rules (:mod:`jaxinterop_lint.rules`) turn events
into findings.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from ..knowledge.apis import Removed, Sink
from .values import Value


@dataclass(frozen=True)
class TryContext:
    """An enclosing ``try``: its handlers as ``(except node, caught class names or None for
    a bare except)``.  ``kind`` is ``except`` for a ``try`` statement, or for a ``with``
    whose context manager catches (``node`` the with statement, the handler node the context
    manager's call): ``suppress`` (``contextlib.suppress``) or ``expects`` (a test that asserts
    the failure: ``pytest.raises``, ``self.assertRaises`` ...).  ``caller`` when the ``try``
    is in a function that calls the one holding the export (a calling context).
    ``reraising``: the indexes of the handlers whose body always raises again (``raise``,
    ``raise Other(...) from e``, ``sys.exit(...)``): one catches, but the error still leaves
    the ``try``."""

    node: Any
    handlers: tuple
    kind: str = "except"
    caller: bool = False
    reraising: tuple = ()


@dataclass(frozen=True)
class CallFrame:
    """One call of a calling context: ``caller`` (the calling function's name,
    ``<module>`` at module level) calls ``callee`` at ``call`` (a node of ``owner``, the
    caller's module analysis) passing ``argument`` (the argument's node, None for a bound
    receiver) as the callee's parameter ``param``."""

    caller: str
    callee: str
    call: Any
    argument: Any
    param: str
    owner: Any = None


@dataclass(frozen=True)
class SinkEvent:
    """An array value reaching an interop consumer.

    ``node`` is the reported node (the call, the attribute); ``consumer`` the consumer as
    written in messages (``torch.from_dlpack()``); ``subject`` the source text of the
    exported expression; ``tries`` the enclosing ``try`` contexts, innermost last (those of
    the callers of a calling context first, marked ``caller``); ``via`` a description of the
    callee when the export happens inside a called function of another module (the sink is
    then that function's, reported at the call); ``context`` the calling context of an export
    inside a function of this module that a caller reaches with a multi-device value, as
    :class:`CallFrame` records, outermost call first (the event is then at the sink inside
    the callee, ``value`` the caller's); ``placed``: the callee of ``via`` puts a value on
    the argument (a sharding) and exports that value, so the argument itself is no array.
    """

    node: Any
    consumer: str
    sink: Sink
    value: Value
    subject: str
    function: str
    tries: tuple = ()
    single_device_process: bool = False
    via: Optional[str] = None
    inner: Any = None
    context: tuple = ()
    versions: Optional[frozenset] = None   # the JAX releases reaching the sink (analysis/versions.py)
    placed: bool = False
    # the consumer was read from a dict by a parameter's key: ``(parameter, the constant keys
    # that pick it)``; a caller giving another constant key reaches no export
    when: Optional[tuple] = None


@dataclass(frozen=True)
class RemovedEvent:
    """A use of a removed JAX API: ``api`` as written in messages, ``removed`` the table
    entry, ``kind`` one of ``call``, ``attribute``, ``capsule``, ``import``, ``method-call``
    (``x.device_buffers()``), ``probe`` (a ``hasattr`` of a removed array attribute that is
    False in every release reaching it); ``fixable``
    parts for the fixer (``receiver`` node of ``x.device_buffer``, ``argument`` node)."""

    node: Any
    api: str
    removed: Removed
    kind: str
    function: str
    receiver: Any = None
    argument: Any = None
    tries: tuple = ()                      # enclosing ``try`` contexts, innermost last
    versions: Optional[frozenset] = None   # the JAX releases reaching the use (analysis/versions.py)


@dataclass(frozen=True)
class FfiCopyEvent:
    """A copying export of an FFI ``Buffer`` (rule JXI004): ``how`` says what copies."""

    node: Any
    consumer: str
    subject: str
    how: str
    function: str
    view: str = "numpy"


@dataclass(frozen=True)
class ExportEffect:
    """In a function summary: the part ``path`` (a tuple of part keys, see
    :mod:`.values`) of parameter ``param`` reaches the sink of ``event`` inside; with
    ``placed``, that part is where a value reaching the sink is put
    (``torch.from_dlpack(jax.device_put(x, sharding))``: the event's value has
    ``placed_by``), so the export spans several devices when the caller passes a sharding."""

    param: int
    event: SinkEvent
    path: tuple = ()
    placed: bool = False
