"""A local package source for pip, offline: wheels of distributions installed in this
interpreter (pytest and what it needs) re-packed from their installed files, beside which
``conftest.build_wheel`` writes tiny wheels of our own. Given to pip as ``PIP_FIND_LINKS``
with ``PIP_NO_INDEX=1``, so a test runs an "online" install (build isolation, the
dependencies resolved by pip) without any network."""
from __future__ import annotations

import base64
import hashlib
import importlib.metadata
import re
import zipfile
from pathlib import Path

# pytest and what it needs on Python 3.11+ (colorama is Windows-only)
PYTEST = ("pytest", "pluggy", "iniconfig", "packaging", "pygments")
_DROPPED = {"INSTALLER", "REQUESTED", "direct_url.json", "RECORD"}


def repack(name: str, folder: Path) -> Path:
    """A pure-Python wheel of the installed distribution ``name`` (its package files and
    its ``.dist-info``, a fresh RECORD; console scripts come back from entry_points.txt)."""
    dist = importlib.metadata.distribution(name)
    stem = f"{re.sub(r'[-_.]+', '_', dist.metadata['Name'])}-{dist.version}"
    files: dict[str, bytes] = {}
    info = None
    for entry in dist.files or []:
        rel = str(entry)
        if rel.startswith("..") or "__pycache__" in rel or rel.endswith(".pyc"):
            continue
        if ".dist-info/" in rel:
            info = rel.split("/", 1)[0]
            if rel.split("/", 1)[1] in _DROPPED:
                continue
        path = Path(str(entry.locate()))
        if path.is_file():
            files[rel] = path.read_bytes()
    assert info is not None, f"{name} has no .dist-info"
    record = []
    for rel, data in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{rel},sha256={digest},{len(data)}")
    record.append(f"{info}/RECORD,,")
    files[f"{info}/RECORD"] = ("\n".join(record) + "\n").encode()
    folder.mkdir(parents=True, exist_ok=True)
    wheel = folder / f"{stem}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for rel, data in files.items():
            archive.writestr(rel, data)
    return wheel


def pytest_wheels(folder: Path) -> Path:
    """``folder`` holding wheels of pytest and its dependencies; returns it."""
    for name in PYTEST:
        repack(name, folder)
    return folder


def offline_pip(folder: Path) -> dict[str, str]:
    """pip's settings for installing from ``folder`` only (no index, no user config)."""
    import os

    return {"PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(folder), "PIP_CONFIG_FILE": os.devnull,
            "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
