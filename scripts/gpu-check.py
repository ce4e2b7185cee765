#!/usr/bin/env python
"""Exercise the shim's CuPy, numba CUDA and Warp patches against the real libraries on a GPU.

Usage: ``PYTHONPATH=. python scripts/gpu-check.py [--strict]``

Needs a CUDA GPU visible to JAX and at least one of cupy, numba (CUDA target), warp.  When
those are missing it prints why and exits 0 (``--strict``: exit 3), so it can sit in any
pipeline.  Multi-device arrays come from 8 forced CPU host devices (set here before JAX is
imported), and, when there are two GPUs or more, from a mesh over the GPUs.  For each
consumer it checks, against the unpatched call made first:

* raise mode: the silent host gathers (``cupy.asarray/array/asanyarray/ascontiguousarray``,
  ``numba.cuda.to_device``) raise ``ValueError("__cuda_array_interface__() is supported only
  for unsharded arrays.")``; the others raise exactly what the unpatched call raised;
* record mode: one hit per call at the calling line, and the call's result is unchanged;
* a single-GPU array passes through unchanged (same result as unpatched).

Exit status: 0 all checks passed (or skipped), 1 a check failed.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import traceback

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

SILENT = ("ValueError", "__cuda_array_interface__() is supported only for unsharded arrays.")


def _outcome(fn, x):
    try:
        value = fn(x)
    except Exception as exc:
        return ("raised", type(exc).__name__, str(exc), getattr(exc, "jaxinterop_code", None))
    return ("value", _host(value))


def _host(value):
    for convert in (lambda v: v.get(), lambda v: v.copy_to_host(), lambda v: v.numpy()):
        try:
            import numpy as np

            return np.asarray(convert(value)).tolist()
        except Exception:
            continue
    return repr(type(value))


def consumers() -> dict:
    """name -> (callable, silent gather?) for every importable real library."""
    out = {}
    try:
        import cupy

        for name in ("asarray", "array", "asanyarray", "ascontiguousarray"):
            out[f"cupy.{name}"] = (getattr(cupy, name), True)
        out["cupy.from_dlpack"] = (cupy.from_dlpack, False)
    except Exception as exc:
        print(f"gpu-check: cupy unavailable: {exc}")
    try:
        from numba import cuda

        if cuda.is_available():
            out["numba.cuda.to_device"] = (cuda.to_device, True)
            out["numba.cuda.as_cuda_array"] = (cuda.as_cuda_array, False)
        else:
            print("gpu-check: numba.cuda reports no usable GPU")
    except Exception as exc:
        print(f"gpu-check: numba.cuda unavailable: {exc}")
    try:
        import warp

        warp.init()
        out["warp.from_jax"] = (warp.from_jax, False)
        out["warp.from_dlpack"] = (warp.from_dlpack, False)
    except Exception as exc:
        print(f"gpu-check: warp unavailable: {exc}")
    return out


def _fresh(name: str):
    """Look the consumer up again through its module (the patched attribute when installed)."""
    module_name, _, attr = name.rpartition(".")
    return getattr(sys.modules[module_name], attr)


def run_checks(table: dict) -> tuple[int, int]:
    """Run every check; return (passed, failed)."""
    import jax
    import jax.numpy as jnp
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as P

    from jaxinterop_lint import shim

    gpus = jax.devices("gpu")
    cpu_mesh = jax.sharding.Mesh(jax.devices("cpu"), ("d",))
    arrays = {"cpu-sharded": jax.device_put(jnp.arange(16.0), NamedSharding(cpu_mesh, P("d"))),
              "cpu-replicated": jax.device_put(jnp.arange(16.0), NamedSharding(cpu_mesh, P()))}
    if len(gpus) > 1:
        gpu_mesh = jax.sharding.Mesh(gpus, ("g",))
        arrays["gpu-sharded"] = jax.device_put(jnp.arange(16.0 * len(gpus)), NamedSharding(gpu_mesh, P("g")))
        arrays["gpu-replicated"] = jax.device_put(jnp.arange(16.0), NamedSharding(gpu_mesh, P()))
    single = jax.device_put(jnp.arange(16.0), gpus[0])
    passed = failed = 0

    def check(ok: bool, what: str) -> None:
        nonlocal passed, failed
        passed += ok
        failed += not ok
        print(f"{'ok  ' if ok else 'FAIL'} {what}")

    unpatched = {(n, k): _outcome(fn, x) for n, (fn, _) in table.items() for k, x in arrays.items()}
    unpatched_single = {n: _outcome(fn, single) for n, (fn, _) in table.items()}
    with shim.active("raise"):
        for name, (_, silent) in table.items():
            fn = _fresh(name)
            check(getattr(fn, "__jaxinterop_shim__", False), f"{name} is patched")
            for kind, x in arrays.items():
                got = _outcome(fn, x)
                before = unpatched[(name, kind)]
                if silent:
                    check(got[:3] == ("raised",) + SILENT, f"raise {name}({kind}): {got[:3]}")
                else:
                    check(before[0] == "raised" and got[:3] == before[:3], f"raise {name}({kind}): {got[:3]} "
                          f"vs unpatched {before[:3]}")
            check(_outcome(fn, single) == unpatched_single[name], f"raise {name}(single GPU) passes through")
    with tempfile.TemporaryDirectory() as tmp:
        report = os.path.join(tmp, "hits.jsonl")
        with shim.active("record", report):
            for name in table:
                fn = _fresh(name)
                for kind, x in arrays.items():
                    check(_outcome(fn, x)[:3] == unpatched[(name, kind)][:3], f"record {name}({kind}) unchanged")
            hits = shim.hit_count()
        with open(report) as fh:
            lines = fh.read().splitlines()
        check(hits == len(lines) == len(table) * len(arrays), f"record: {len(lines)} hits, one per call")
    return passed, failed


def main(argv: list[str] | None = None) -> int:
    """Skip cleanly without a GPU or libraries; else run the checks (exit 1 on a failure)."""
    parser = argparse.ArgumentParser(description="Check the shim on real CuPy / numba CUDA / Warp.")
    parser.add_argument("--strict", action="store_true", help="exit 3 instead of 0 when skipped")
    args = parser.parse_args(argv)
    skip = 3 if args.strict else 0
    try:
        import jax

        gpus = jax.devices("gpu")
    except Exception as exc:
        print(f"gpu-check: skipped: no GPU visible to JAX ({type(exc).__name__}: {exc})")
        return skip
    table = consumers() if gpus else {}
    if not table:
        print("gpu-check: skipped: no GPU or none of cupy / numba.cuda / warp is usable")
        return skip
    print(f"gpu-check: {len(gpus)} GPU(s): {gpus}; jax {jax.__version__}")
    try:
        passed, failed = run_checks(table)
    except Exception:
        traceback.print_exc()
        return 1
    print(f"gpu-check: {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
