"""The reproduce workflow's import record (flow/workflows/reproduce/run/imports.py): note
which file each top-level module came from, at exit; change nothing else."""
import os
import sys

_here = os.path.dirname(os.path.abspath(__file__))
_record = os.environ.pop("FLOW_IMPORT_RECORD", None)
_cwd = os.getcwd()
_real = os.path.realpath(_here)


def _ours(entry):
    return bool(entry) and os.path.realpath(entry) == _real


_value = os.environ.get("PYTHONPATH")
if _value is not None:
    _parts = _value.split(os.pathsep)
    _mine = [p for p in _parts if _ours(p)][:1]
    if _mine:
        _parts.remove(_mine[0])
    if _parts and _parts != [""]:
        os.environ["PYTHONPATH"] = os.pathsep.join(_parts)
    else:
        del os.environ["PYTHONPATH"]
sys.path[:] = [p for p in sys.path if not _ours(p)]


def _write():
    import json
    stdlib = os.path.join(getattr(sys, "base_prefix", sys.prefix), "lib")
    found = {}
    for name, module in list(sys.modules.items()):
        if "." in name or module is None:
            continue
        where = getattr(module, "__file__", None)
        if not where:
            try:
                where = list(getattr(module, "__path__", None) or [])[0]
            except (IndexError, TypeError):
                where = None
        if not isinstance(where, str) or not where:
            continue
        where = os.path.normpath(os.path.join(_cwd, where))
        if where.startswith(stdlib + os.sep) and "-packages" not in where:
            continue
        found[name] = where
    try:
        with open(_record, "a") as handle:
            handle.write(json.dumps({"pid": os.getpid(), "modules": found}) + "\n")
    except (OSError, IOError):
        pass


if _record:
    import atexit
    atexit.register(_write)
del sys.modules["sitecustomize"]
try:
    import sitecustomize  # noqa: F401 (the interpreter's own, when it has one)
except ImportError as exc:
    if getattr(exc, "name", "sitecustomize") != "sitecustomize":
        raise
