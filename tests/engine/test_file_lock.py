"""The cross-process lock (fsutil.FileLock): exclusive between holders, reentrant per object, gone with its process."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import filelock
import pytest

from openprogram_memory.fsutil import FileLock


def test_a_second_holder_waits_then_times_out_and_gets_it_once_released(tmp_path: Path):
    path = tmp_path / "x.lock"
    first, second = FileLock(path), FileLock(path)
    first.acquire(0)
    started = time.monotonic()
    with pytest.raises(TimeoutError):
        second.acquire(0.2)
    assert time.monotonic() - started >= 0.2
    first.release()
    second.acquire(0)
    assert second.is_locked and not first.is_locked
    second.release()


def test_reentrant_per_object(tmp_path: Path):
    lock, other = FileLock(tmp_path / "x.lock"), FileLock(tmp_path / "x.lock")
    lock.acquire(0)
    lock.acquire(0)  # a writer pass holding it runs a transaction inside
    lock.release()
    with pytest.raises(TimeoutError):
        other.acquire(0)  # still held: one release per acquire
    lock.release()
    other.acquire(0)
    other.release()


def test_it_excludes_and_is_excluded_by_filelock_holders(tmp_path: Path):
    path = tmp_path / "x.lock"
    held = filelock.FileLock(str(path), thread_local=False)
    held.acquire()
    with pytest.raises(TimeoutError):
        FileLock(path).acquire(0.1)
    held.release()
    mine = FileLock(path)
    mine.acquire(0)
    with pytest.raises(filelock.Timeout):
        filelock.FileLock(str(path), thread_local=False).acquire(timeout=0.1)
    mine.release()


def test_the_lock_dies_with_its_process(tmp_path: Path):
    path = tmp_path / "x.lock"
    holder = subprocess.Popen([sys.executable, "-c", (
        "import sys, time; from openprogram_memory.fsutil import FileLock; "
        f"FileLock({str(path)!r}).acquire(5); print('held', flush=True); time.sleep(60)")],
        stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(TimeoutError):
            FileLock(path).acquire(0.1)
        holder.kill()
        holder.wait()
        lock = FileLock(path)
        lock.acquire(2)  # killed, not released: the kernel let go
        lock.release()
    finally:
        holder.kill()


def test_a_removed_lock_file_is_locked_anew(tmp_path: Path):
    path = tmp_path / "x.lock"
    lock = FileLock(path)
    lock.acquire(0)
    lock.release()
    path.unlink()
    lock.acquire(0)
    assert path.exists()
    lock.release()


def test_a_waiter_whose_lock_file_was_removed_does_not_hold_the_dead_file(tmp_path: Path):
    import threading

    path = tmp_path / "x.lock"
    first = FileLock(path, poll=0.01)
    first.acquire(0)
    outcome: list[str] = []

    def wait() -> None:
        try:
            FileLock(path, poll=0.01).acquire(0.5)
            outcome.append("held")
        except TimeoutError:
            outcome.append("timeout")

    waiter = threading.Thread(target=wait)
    waiter.start()
    time.sleep(0.1)
    path.unlink()  # someone removes the lock file while it is held and waited for
    third = FileLock(path)
    third.acquire(0)  # a new file: a new lock
    first.release()  # the waiter gets the flock of the removed file: it must not count as holding
    waiter.join()
    assert outcome == ["timeout"]
    third.release()
