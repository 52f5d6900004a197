"""The memory folder for the suite's temporary files takes only a folder of this user's own."""
from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from tests import memoryfolder


def test_a_new_folder_is_made_and_opened_as_tmp_is(tmp_path: Path) -> None:
    """A missing folder is made, sticky and writable by all, and found again as is."""
    path = str(tmp_path / "mine")
    assert path == memoryfolder.own(path)
    assert 0o1777 == stat.S_IMODE(os.lstat(path).st_mode)
    assert path == memoryfolder.own(path)


def test_a_link_or_a_file_in_its_place_is_refused_and_left_alone(tmp_path: Path) -> None:
    """A link planted where the folder goes is not followed: its target keeps its mode."""
    target = tmp_path / "elsewhere"
    target.mkdir(mode=0o700)
    (tmp_path / "link").symlink_to(target)
    (tmp_path / "file").write_text("")
    assert None is memoryfolder.own(str(tmp_path / "link"))
    assert None is memoryfolder.own(str(tmp_path / "file"))
    assert 0o700 == stat.S_IMODE(target.stat().st_mode)


def test_someone_elses_folder_is_refused(tmp_path: Path) -> None:
    """A folder another user made first is not used, nor opened up."""
    if os.geteuid() != 0:
        pytest.skip("giving a folder to another user takes root (CI runs as root)")
    theirs = tmp_path / "theirs"
    theirs.mkdir(mode=0o700)
    os.chown(theirs, 65534, 65534)  # nobody
    assert None is memoryfolder.own(str(theirs))
    assert 0o700 == stat.S_IMODE(theirs.stat().st_mode)


def test_a_folder_that_is_no_tmpfs_mount_is_not_used(tmp_path: Path) -> None:
    """Only a tmpfs mount point counts: a folder inside one (or on a disk) does not."""
    assert None is memoryfolder.folder(str(tmp_path), free_min=0)
    assert [] == list(tmp_path.iterdir())
