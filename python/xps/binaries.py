"""Finding xps's Go binaries (worker, serve, ctrgen, ...).

``find(name)`` looks, in order, in:

1. ``$XPS_BIN``: a directory holding the binaries (``go build -o DIR
   ./cmd/...`` in the repository);
2. the repository the package is used from (``$XPS_REPO``, else the first
   directory above the current one whose go.mod is xps's): the binary is
   built there once with ``go build`` into ``$XPS_CACHE`` (default
   ``~/.cache/xps/python-bin``), saying so on stderr, and rebuilt when a
   Go file of the repository is newer than it;
3. ``PATH``, when the program found there answers ``-version`` as xps's.

A binary that is missing, or that is not xps's, raises BinaryNotFound
saying which and how to build it.
"""

import os
import pathlib
import shutil
import subprocess
import sys

__all__ = ["BinaryNotFound", "find", "version"]

MODULE = "github.com/xdlgo/xps"


class BinaryNotFound(RuntimeError):
    """An xps binary could not be found or built."""


def _repo():
    env = os.environ.get("XPS_REPO")
    if env:
        root = pathlib.Path(env)
        if not _is_repo(root):
            raise BinaryNotFound(f"$XPS_REPO={env} is not the xps repository (no go.mod of {MODULE})")
        return root
    d = pathlib.Path.cwd()
    for p in (d, *d.parents):
        if _is_repo(p):
            return p
    return None


def _is_repo(p):
    try:
        first = (p / "go.mod").read_text().splitlines()[0]
    except (OSError, IndexError):
        return False
    return first.strip() == f"module {MODULE}"


def version(path):
    """The line ``path -version`` prints ("xps NAME REVISION GOVERSION"),
    or None when the program is not xps's."""
    try:
        out = subprocess.run([str(path), "-version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    line = (out.stdout or out.stderr).strip()
    return line if out.returncode == 0 and line.startswith("xps ") else None


def _newest_source(root):
    newest = 0.0
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if not d.startswith(".") and d not in ("python", "charts", "bench")]
        for f in filenames:
            if f.endswith(".go") or f in ("go.mod", "go.sum"):
                newest = max(newest, os.stat(os.path.join(dirpath, f)).st_mtime)
    return newest


def _build(root, name):
    cache = pathlib.Path(os.environ.get("XPS_CACHE", pathlib.Path.home() / ".cache" / "xps" / "python-bin"))
    out = cache / name
    if out.exists() and out.stat().st_mtime >= _newest_source(root):
        return str(out)
    if shutil.which("go") is None:
        raise BinaryNotFound(f"xps: {name} is not built and there is no go command to build it: "
                             f"build it with `go build -o DIR ./cmd/{name}` and set XPS_BIN=DIR")
    cache.mkdir(parents=True, exist_ok=True)
    print(f"xps: building {name} with go build in {root} (once)", file=sys.stderr, flush=True)
    res = subprocess.run(["go", "build", "-o", str(out), f"./cmd/{name}"], cwd=root, capture_output=True, text=True)
    if res.returncode != 0:
        raise BinaryNotFound(f"xps: go build ./cmd/{name} failed:\n{res.stderr.strip()}")
    return str(out)


def find(name):
    """The path of xps's binary ``name`` (see the module's doc)."""
    env = os.environ.get("XPS_BIN")
    if env:
        p = pathlib.Path(env) / name
        if not p.is_file() or not os.access(p, os.X_OK):
            raise BinaryNotFound(f"$XPS_BIN={env} has no {name}: build it with `go build -o {env} ./cmd/{name}` "
                                 "in the xps repository")
        if version(p) is None:
            raise BinaryNotFound(f"{p} does not answer -version as xps's binaries do: rebuild it from the xps repository")
        return str(p)
    root = _repo()
    if root is not None:
        return _build(root, name)
    p = shutil.which(name)
    if p is not None and version(p) is not None:
        return p
    other = f" ({p} is another program)" if p else ""
    raise BinaryNotFound(f"xps: no {name}{other}: set XPS_BIN to a directory of the binaries "
                         f"(go build -o DIR ./cmd/... in the xps repository) or XPS_REPO to the repository")
