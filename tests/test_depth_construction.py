"""Issue 12, construction and update: literals and comprehensions; NamedTuple (positional and
keyword), dataclasses and the dataclass-like decorators (flax.struct.dataclass,
chex.dataclass), flax's TrainState (create, replace, apply_gradients), plain classes whose
``__init__`` stores its parameters; ``dataclasses.replace``, ``._replace``, ``.replace``;
mutation by append, extend, insert, ``d[k] = v``, update, setdefault, ``obj.attr = v``."""
from __future__ import annotations

import pytest

from depth_pairs import check_pair

RECORDS = """
        from flax import struct
        @dataclasses.dataclass
        class S:
            w: jax.Array
            n: int
        class T(NamedTuple):
            w: jax.Array
            n: int
        @struct.dataclass
        class U:
            w: jax.Array
"""

PAIRS = {
    "literals_and_comprehensions": (
        """
        pairs = [(np.ones(2), jax.device_put(x, s)) for _ in range(3)]
        torch.from_dlpack(pairs[0][1])  # expect: JXI002
        table = {k: jax.device_put(x, s) for k in "ab"}
        torch.from_dlpack(table["a"])  # expect: JXI002
        gen = (jax.device_put(x, s) for _ in range(2))
        torch.from_dlpack(next(gen))  # expect: JXI002
        """,
        """
        pairs = [(np.ones(2), jax.device_put(x, s)) for _ in range(3)]
        torch.from_dlpack(pairs[0][0])
        table = {k: np.ones(2) for k in "ab"}
        torch.from_dlpack(table["a"])
        """,
    ),
    "namedtuple_positional_and_keyword": (
        """
        class Metrics(NamedTuple):
            loss: jax.Array
            count: int
        m = Metrics(jax.device_put(x, s), 3)
        torch.from_dlpack(m.loss)  # expect: JXI002
        k = Metrics(count=1, loss=jax.device_put(x, s))
        torch.from_dlpack(k[0])  # expect: JXI002
        loss, count = k
        torch.from_dlpack(loss)  # expect: JXI002
        """,
        """
        class Metrics(NamedTuple):
            loss: jax.Array
            count: int
        m = Metrics(jax.device_put(x, s), 3)
        torch.tensor(m.count)
        k = Metrics(count=1, loss=jax.device_put(x, s))
        torch.tensor(k[1])
        loss, count = k
        torch.tensor(count)
        """,
    ),
    "dataclass_like_decorators": (
        """
        import chex
        from flax import struct
        @struct.dataclass
        class A:
            w: jax.Array
            n: int = 0
        @chex.dataclass(frozen=True)
        class B:
            w: jax.Array
            n: int
        torch.from_dlpack(A(jax.device_put(x, s)).w)  # expect: JXI002
        torch.from_dlpack(B(w=jax.device_put(x, s), n=1).w)  # expect: JXI002
        """,
        """
        import chex
        from flax import struct
        @struct.dataclass
        class A:
            w: jax.Array
            n: int = 0
        @chex.dataclass(frozen=True)
        class B:
            w: jax.Array
            n: int
        torch.tensor(A(jax.device_put(x, s)).n)
        torch.tensor(B(w=jax.device_put(x, s), n=1).n)
        """,
    ),
    "train_state": (
        """
        from flax.training import train_state
        st = train_state.TrainState.create(apply_fn=f, params=jax.device_put(x, s), tx=tx)
        torch.from_dlpack(st.params)  # expect: JXI002
        torch.from_dlpack(st.opt_state)  # expect: JXI002
        new = st.apply_gradients(grads=g)
        torch.from_dlpack(new.params)  # expect: JXI002
        host = train_state.TrainState.create(apply_fn=f, params=jnp.ones(3), tx=tx)
        torch.from_dlpack(host.replace(params=jax.device_put(x, s)).params)  # expect: JXI002
        """,
        """
        from flax.training import train_state
        st = train_state.TrainState.create(apply_fn=f, params=jax.device_put(x, s), tx=tx)
        torch.tensor(st.step)
        new = st.apply_gradients(grads=g)
        torch.tensor(new.step)
        host = train_state.TrainState.create(apply_fn=f, params=jnp.ones(3), tx=tx)
        torch.from_dlpack(host.apply_gradients(grads=jnp.ones(3)).params)
        """,
    ),
    "train_state_subclass": (
        """
        from flax.training.train_state import TrainState
        class State(TrainState):
            batch_stats: dict
        st = State.create(apply_fn=f, params=jnp.ones(3), tx=tx, batch_stats=jax.device_put(x, s))
        torch.from_dlpack(st.batch_stats)  # expect: JXI002
        """,
        """
        from flax.training.train_state import TrainState
        class State(TrainState):
            batch_stats: dict
        st = State.create(apply_fn=f, params=jnp.ones(3), tx=tx, batch_stats=jax.device_put(x, s))
        torch.from_dlpack(st.params)
        """,
    ),
    "record_methods_on_a_parameter": (
        """
        from flax.training import train_state
        def update(state, grads):
            return state.apply_gradients(grads=grads)
        def bump(state):
            return state.replace(step=state.step + 1)
        st = train_state.TrainState.create(apply_fn=f, params=jax.device_put(x, s), tx=tx)
        torch.from_dlpack(update(st, g).params)  # expect: JXI002
        torch.from_dlpack(bump(st).params)  # expect: JXI002
        """,
        """
        from flax.training import train_state
        def update(state, grads):
            return state.apply_gradients(grads=grads)
        def bump(state):
            return state.replace(step=state.step + 1)
        st = train_state.TrainState.create(apply_fn=f, params=jax.device_put(x, s), tx=tx)
        torch.tensor(update(st, g).step)
        torch.tensor(bump(st).step)
        """,
    ),
    "plain_class_init_stores_parameters": (
        """
        class Holder:
            def __init__(self, w, n):
                self.w = w
                self.n = n
        h = Holder(jax.device_put(x, s), 2)
        torch.from_dlpack(h.w)  # expect: JXI002
        """,
        """
        class Holder:
            def __init__(self, w, n):
                self.w = w
                self.n = n
        h = Holder(jax.device_put(x, s), 2)
        torch.tensor(h.n)
        g = Holder(np.ones(3), 2)
        torch.from_dlpack(g.w)
        """,
    ),
    "replace_functions_and_methods": (
        RECORDS + """
        torch.from_dlpack(dataclasses.replace(S(np.ones(2), 0), w=jax.device_put(x, s)).w)  # expect: JXI002
        torch.from_dlpack(T(np.ones(2), 0)._replace(w=jax.device_put(x, s))[0])  # expect: JXI002
        torch.from_dlpack(U(np.ones(2)).replace(w=jax.device_put(x, s)).w)  # expect: JXI002
        """,
        RECORDS + """
        torch.from_dlpack(dataclasses.replace(S(jax.device_put(x, s), 0), w=np.ones(2)).w)
        torch.from_dlpack(T(jax.device_put(x, s), 0)._replace(w=np.ones(2))[0])
        torch.from_dlpack(U(jax.device_put(x, s)).replace(w=np.ones(2)).w)
        """,
    ),
    "list_mutation": (
        """
        xs = [np.ones(2)]
        xs.append(jax.device_put(x, s))
        torch.from_dlpack(xs[1])  # expect: JXI002
        ys = [np.ones(2)]
        ys.extend([jax.device_put(x, s)])
        torch.from_dlpack(ys[-1])  # expect: JXI002
        zs = [np.ones(2)]
        zs.insert(0, jax.device_put(x, s))
        torch.from_dlpack(zs[1])  # expect: JXI002
        ws = []
        ws += [jax.device_put(x, s)]
        torch.from_dlpack(ws[0])  # expect: JXI002
        """,
        """
        xs = [np.ones(2)]
        xs.append(jax.device_put(x, s))
        torch.from_dlpack(xs[0])
        ys = [np.ones(2)]
        ys.extend([jax.device_put(x, s)])
        torch.from_dlpack(ys[0])
        """,
    ),
    "dict_and_object_mutation": (
        """
        d = {}
        d["w"] = jax.device_put(x, s)
        torch.from_dlpack(d["w"])  # expect: JXI002
        e = {"n": np.ones(2)}
        e.update({"w": jax.device_put(x, s)})
        torch.from_dlpack(e["w"])  # expect: JXI002
        f = {}
        f.setdefault("w", jax.device_put(x, s))
        torch.from_dlpack(f["w"])  # expect: JXI002
        class O:
            pass
        o = O()
        o.w = jax.device_put(x, s)
        torch.from_dlpack(o.w)  # expect: JXI002
        """,
        """
        d = {}
        d["w"] = jax.device_put(x, s)
        d["n"] = np.ones(2)
        torch.from_dlpack(d["n"])
        e = {"n": np.ones(2)}
        e.update(w=jax.device_put(x, s))
        torch.from_dlpack(e["n"])
        f = {}
        f.setdefault("n", np.ones(2))
        torch.from_dlpack(f["n"])
        class O:
            pass
        o = O()
        o.w = jax.device_put(x, s)
        o.w = np.asarray(o.w)
        torch.from_dlpack(o.w)
        """,
    ),
    "mutation_inside_a_loop": (
        """
        outs = []
        for i in range(3):
            outs.append(jax.device_put(x, s))
        torch.from_dlpack(outs[-1])  # expect: JXI002
        """,
        """
        outs = []
        for i in range(3):
            outs.append(np.ones(i))
        torch.from_dlpack(outs[-1])
        """,
    ),
}


@pytest.mark.parametrize("name", sorted(PAIRS))
def test_construction(name):
    check_pair(*PAIRS[name])
