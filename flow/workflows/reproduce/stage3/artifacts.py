"""Artifact IO for Stage 3, with urllib only (seed: B3 and A2's flatten).

- ``probe``: a one-byte range GET (``Range: bytes=0-0``), following redirects; 200 or
  206 means available (HEAD is rejected by some intermediaries in front of the bucket).
- ``download``: to ``dest`` through a ``.part`` file, with retries; a body shorter than
  its Content-Length is a failed attempt (a silent truncation otherwise surfaces later as
  "cannot find zipfile directory").
- ``extract_wheels``: ``dist/*.whl`` first, else ``*.whl`` at the root, paths junked.
- ``flatten_wheels``: move wheels found in sub-folders up (``gh run download`` layout).

The base URL is a profile setting; tests serve on 127.0.0.1.
"""
from __future__ import annotations

import shutil
import time
import urllib.error
import urllib.request
import zipfile
from pathlib import Path
from typing import Callable

from pydantic import BaseModel, ConfigDict

from flow.workflows.reproduce.errors import ArtifactError
from flow.workflows.reproduce.verdict.models import BLOCKER_NO_WHEEL_EXTRACTED

_CHUNK = 1 << 20


class Probe(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    url: str
    status: int | None  # None: no HTTP answer at all
    ok: bool
    detail: str = ""


def probe(url: str, timeout: float = 30.0) -> Probe:
    """Range-GET one byte of ``url``. Never raises: network errors give ``ok=False``."""
    request = urllib.request.Request(url, headers={"Range": "bytes=0-0"}, method="GET")
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            response.read(1)
            status = response.status
    except urllib.error.HTTPError as exc:
        return Probe(url=url, status=exc.code, ok=False, detail=str(exc.reason))
    except (urllib.error.URLError, OSError) as exc:
        return Probe(url=url, status=None, ok=False, detail=str(exc))
    return Probe(url=url, status=status, ok=status in (200, 206))


def download(url: str, dest: str | Path, *, retries: int = 3, delay: float = 5.0,
             timeout: float = 60.0, sleep: Callable[[float], None] = time.sleep) -> Path:
    """Download ``url`` to ``dest`` (``retries`` extra attempts, ``delay`` seconds apart).

    A 4xx answer is not retried. Raises ArtifactError with the last cause when every
    attempt failed.
    """
    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    part = dest.with_name(dest.name + ".part")
    last = ""
    for attempt in range(retries + 1):
        if attempt:
            sleep(delay)
        try:
            with urllib.request.urlopen(url, timeout=timeout) as response, open(part, "wb") as fh:
                expected = response.headers.get("Content-Length")
                shutil.copyfileobj(response, fh, _CHUNK)
            size = part.stat().st_size
            if expected is not None and size != int(expected):
                last = f"truncated: got {size} of {expected} bytes"
                continue
            part.replace(dest)
            return dest
        except urllib.error.HTTPError as exc:
            last = f"HTTP {exc.code} {exc.reason}"
            if 400 <= exc.code < 500:
                break
        except (urllib.error.URLError, OSError) as exc:
            last = str(exc)
    part.unlink(missing_ok=True)
    raise ArtifactError(
        f"download of {url!r} failed after {attempt + 1} attempt(s): {last}; check the run id "
        "and build_env, or retry later", url=url, blocker=f"artifact download failed: {last}")


def extract_wheels(zip_path: str | Path, dest: str | Path) -> list[Path]:
    """Extract wheels from either layout, junking paths. Raises ArtifactError with the
    seed's ``no_wheel_extracted`` blocker when there is none, and on a broken zip."""
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    try:
        with zipfile.ZipFile(zip_path) as archive:
            names = [n for n in archive.namelist() if n.endswith(".whl")]
            chosen = [n for n in names if n.startswith("dist/") and n.count("/") == 1]
            if not chosen:
                chosen = [n for n in names if "/" not in n]
            out = []
            for name in chosen:
                target = dest / Path(name).name
                with archive.open(name) as src, open(target, "wb") as fh:
                    shutil.copyfileobj(src, fh, _CHUNK)
                out.append(target)
    except zipfile.BadZipFile as exc:
        raise ArtifactError(
            f"{zip_path} is not a readable zip ({exc}); the download was probably truncated, "
            "download it again", url=str(zip_path), blocker=f"bad artifact zip: {exc}") from exc
    if not out:
        raise ArtifactError(f"{zip_path} holds no wheel under dist/ or at its root",
                            url=str(zip_path), blocker=BLOCKER_NO_WHEEL_EXTRACTED)
    return sorted(out)


def flatten_wheels(wheels_dir: str | Path) -> list[Path]:
    """Move ``*.whl`` from sub-folders into ``wheels_dir``; return the wheels there, sorted."""
    root = Path(wheels_dir)
    for wheel in sorted(root.glob("*/**/*.whl")):
        wheel.replace(root / wheel.name)
    return sorted(root.glob("*.whl"))
