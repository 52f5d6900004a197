"""A real PostgreSQL server for tests: ``initdb`` and ``pg_ctl`` from Debian's ``postgresql``
package, one throw-away cluster in a temporary folder on a free port.

The server refuses to run as root, so as root the cluster is made and started as the
``postgres`` system user the package creates (``runuser -u postgres --``), in a folder that user
owns. ``Cluster.url`` is a ``postgresql://`` URL without a password (the cluster trusts local
connections); ``restart`` and ``stop`` serve the fault tests.
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path


def _bin(name: str) -> str | None:
    found = shutil.which(name)
    if found:
        return found
    hits = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    return hits[-1] if hits else None


def available() -> str | None:
    """None when a cluster can be started here, else why not (for a skip that says so)."""
    for name in ("initdb", "pg_ctl"):
        if _bin(name) is None:
            return f"{name} not found: install Debian's postgresql package (.ci/test does)"
    if os.geteuid() == 0 and _runuser() is None:
        return "running as root without runuser: cannot start postgres as its own user"
    return None


def _runuser() -> str | None:
    """util-linux's runuser, also where a root shell's PATH lacks the sbin folders (env -i)."""
    return shutil.which("runuser", path=os.pathsep.join(
        [os.environ.get("PATH", ""), "/usr/sbin", "/sbin"]))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Cluster:
    """One PostgreSQL cluster; ``start`` makes it, ``url`` reaches its ``postgres`` database."""

    def __init__(self) -> None:
        self.base = Path(tempfile.mkdtemp(prefix="orch-pg-"))
        self.data = self.base / "data"
        self.port = _free_port()
        self._as_user: list[str] = []
        if os.geteuid() == 0:
            self._as_user = [str(_runuser()), "-u", "postgres", "--"]
            shutil.chown(self.base, "postgres", "postgres")
        self.user = "postgres" if os.geteuid() == 0 else os.environ.get("USER", "postgres")

    def _run(self, *argv: str, timeout: float = 120) -> None:
        subprocess.run([*self._as_user, *argv], check=True, timeout=timeout, cwd=self.base,
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)

    def start(self) -> Cluster:
        initdb, pg_ctl = _bin("initdb"), _bin("pg_ctl")
        assert initdb and pg_ctl
        self._pg_ctl = pg_ctl
        self._run(initdb, "-D", str(self.data), "-U", self.user, "--auth=trust",
                  "--no-sync", "-E", "UTF8")
        with open(self.data / "postgresql.conf", "a") as fh:
            fh.write(f"\nport = {self.port}\nlisten_addresses = '127.0.0.1'\n"
                     f"unix_socket_directories = '{self.base}'\nfsync = off\n"
                     "max_connections = 200\n")
        self._ctl("start")
        return self

    def _ctl(self, action: str) -> None:
        extra = ["-m", "immediate"] if action in {"stop", "restart"} else []
        self._run(self._pg_ctl, "-D", str(self.data), "-l", str(self.base / "server.log"),
                  "-w", "-t", "60", *extra, action)

    def restart(self) -> None:
        """Stop the server at once (``-m immediate``: sessions cut) and start it again."""
        self._ctl("restart")

    def stop(self) -> None:
        self._ctl("stop")

    def start_again(self) -> None:
        """Start the stopped server on its data and port (an outage's end)."""
        self._ctl("start")

    def url(self, dbname: str = "postgres") -> str:
        return f"postgresql://{self.user}@127.0.0.1:{self.port}/{dbname}"

    def create_db(self, name: str) -> str:
        """A fresh database on this cluster; returns its URL."""
        import psycopg

        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def destroy(self) -> None:
        try:
            self.stop()
        except (subprocess.SubprocessError, OSError):
            pass
        shutil.rmtree(self.base, ignore_errors=True)
