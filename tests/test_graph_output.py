"""``graph --output``: a picture goes to a new file, over an earlier picture of its format, or
into a folder; any other file, a symlink, FIFO or device there is refused (``bad_input``,
exit 2) and left exactly as it was."""

from __future__ import annotations

import os
import socket
import stat
from pathlib import Path

import pytest

from tests.contract.driver import Driver


def _svg(ws: Path, out: Path) -> tuple[int, dict]:
    call = Driver(ws, {"ORCHESTRATOR_PLUGINS": "tests.contract.toyflow"}).call(
        ["graph", "toy", "--format", "svg", "--output", str(out)])
    assert call.spec is not None, call.stderr
    return call.code, call.spec


def test_a_symlink_is_neither_replaced_nor_written_through(tmp_path: Path) -> None:
    """A link to a file: refused, the link and the file it points at as they were."""
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    link = tmp_path / "pic.svg"
    link.symlink_to(victim)
    code, spec = _svg(tmp_path / "ws", link)
    assert (2, "bad_input") == (code, spec["error"]["code"])
    assert "symbolic link" in spec["error"]["message"]
    assert link.is_symlink() and "keep me" == victim.read_text()


def test_a_fifo_is_refused_and_stays(tmp_path: Path) -> None:
    """A FIFO is refused at once (no open that waits for a reader) and stays a FIFO."""
    fifo = tmp_path / "pic.svg"
    os.mkfifo(fifo)
    code, spec = _svg(tmp_path / "ws", fifo)
    assert (2, "bad_input", True) == (code, spec["error"]["code"],
                                      "FIFO" in spec["error"]["message"])
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


@pytest.mark.parametrize("what", ["character device", "socket"])
def test_a_device_or_socket_is_refused_and_stays(tmp_path: Path, what: str) -> None:
    """A device node of the test's own (as root a rename would have replaced ``/dev/full``)
    or a socket is refused and stays what it was."""
    node = tmp_path / "pic.svg"
    if what == "socket":
        holder = socket.socket(socket.AF_UNIX)
        holder.bind(str(node))
        holder.close()
    else:
        try:
            os.mknod(node, stat.S_IFCHR | 0o600, os.makedev(1, 7))  # /dev/full's numbers
        except PermissionError:
            pytest.skip("making a device node needs root (CAP_MKNOD)")
    before = os.lstat(node)
    code, spec = _svg(tmp_path / "ws", node)
    assert (2, "bad_input", True) == (code, spec["error"]["code"],
                                      what in spec["error"]["message"])
    after = os.lstat(node)
    assert (before.st_ino, before.st_mode) == (after.st_ino, after.st_mode)


def test_a_folder_gets_a_named_file_and_a_regular_file_is_replaced(tmp_path: Path) -> None:
    """``--output FOLDER`` writes FOLDER/<workflow>.svg; a regular file is replaced."""
    folder = tmp_path / "pics"
    folder.mkdir()
    code, spec = _svg(tmp_path / "ws", folder)
    assert 0 == code, spec
    assert (folder / "toy.svg").resolve() == Path(spec["picture"])
    assert (folder / "toy.svg").read_text().lstrip().startswith("<?xml")
    code, again = _svg(tmp_path / "ws", folder / "toy.svg")
    assert (0, spec["picture"]) == (code, again["picture"])


@pytest.mark.parametrize("name", ["passwd", "notes.txt", "picture.png"])
def test_a_file_that_is_not_a_picture_of_the_format_is_never_replaced(tmp_path: Path,
                                                                      name: str) -> None:
    """A picture replaces only an earlier one of its format: an ``/etc/passwd``-like file,
    a text file or a PNG asked for as SVG stays byte for byte as it was (a root caller's
    typo cannot overwrite a system file)."""
    target = tmp_path / name
    target.write_bytes(b"root:x:0:0:root:/root:/bin/bash\n")
    before = os.lstat(target)
    code, spec = _svg(tmp_path / "ws", target)
    assert (2, "bad_input", True) == (code, spec["error"]["code"],
                                      "not a .svg picture" in spec["error"]["message"])
    after = os.lstat(target)
    assert (before.st_ino, b"root:x:0:0:root:/root:/bin/bash\n") == (after.st_ino,
                                                                    target.read_bytes())


@pytest.mark.parametrize("inside", ["link", "fifo"])
def test_what_the_folder_holds_under_that_name_is_checked_too(tmp_path: Path,
                                                              inside: str) -> None:
    """In a folder, the named file is checked like ``--output`` itself."""
    folder = tmp_path / "pics"
    folder.mkdir()
    planted = folder / "toy.svg"
    if inside == "link":
        planted.symlink_to(tmp_path / "elsewhere.svg")
    else:
        os.mkfifo(planted)
    code, spec = _svg(tmp_path / "ws", folder)
    assert (2, "bad_input") == (code, spec["error"]["code"])
    assert not (tmp_path / "elsewhere.svg").exists() and not planted.is_file()
