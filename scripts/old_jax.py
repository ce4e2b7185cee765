#!/usr/bin/env python3
"""Make the virtual environments with older JAX releases that the replacement proofs of rule
JXI005 run the removed calls in (tests/test_versions.py, fixtures/versions/replacements.py).

    python scripts/old_jax.py [--dir DIR]

creates ``DIR/jax-0.6.2`` (jax.dlpack.to_dlpack, DLPack capsules, device_put_replicated /
device_put_sharded and PositionalSharding still work there; torch is added for the DLPack
case) and ``DIR/jax-0.4.26`` (the last release with ``x.device_buffer(s)``), outside the
repository (default DIR: ``~/.cache/jaxinterop-lint/old-jax``, where the tests look; or set
``JAXINTEROP_OLD_JAX`` to the interpreters, separated by ``os.pathsep``).  Packages come from
PyPI through pip; an environment that already imports its jax is left as it is.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import venv
from pathlib import Path

DEFAULT_DIR = Path(os.path.expanduser("~/.cache/jaxinterop-lint/old-jax"))
ENVIRONMENTS = {
    "jax-0.6.2": ["jax==0.6.2", "jaxlib==0.6.2", "numpy<2.3", "torch"],
    "jax-0.4.26": ["jax==0.4.26", "jaxlib==0.4.26", "numpy<2", "scipy<1.14"],
}


def ensure(folder: Path, requirements: list) -> Path:
    """Create ``folder`` with ``requirements`` installed unless its jax already imports;
    returns its interpreter.  Raises subprocess.CalledProcessError when pip fails."""
    python = folder / "bin" / "python"
    version = requirements[0].split("==")[1]
    if python.exists():
        probe = subprocess.run([str(python), "-c", "import jax; print(jax.__version__)"], capture_output=True, text=True)
        if probe.returncode == 0 and probe.stdout.strip() == version:
            return python
    venv.EnvBuilder(with_pip=True, clear=True).create(folder)
    subprocess.run([str(python), "-m", "pip", "install", "-q", *requirements], check=True)
    return python


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dir", type=Path, default=DEFAULT_DIR, help=f"where to put them (default {DEFAULT_DIR})")
    opts = ap.parse_args(argv)
    for name, requirements in ENVIRONMENTS.items():
        try:
            print(ensure(opts.dir / name, requirements))
        except subprocess.CalledProcessError as exc:
            print(f"old_jax: {name}: pip failed ({exc.returncode})", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
