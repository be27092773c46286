"""Atomic writes: a reader never sees a half-written file or folder, and a killed run
leaves nothing that the next run does not clean up or put back.

Files are written to a temporary name in the same folder and renamed into place.
Folders (catalogs, releases) are built under a hidden temporary name and swapped in at
the end; on any error, Ctrl-C, SIGTERM or SIGHUP (the CLI turns both into an interrupt),
the temporary folder is removed and an existing folder is left as it was.

`kill -9` cannot be caught, so every temporary name says who made it:
`.NAME.tmp-<pid>-<host>-<random>`. The next write of NAME (and the next read of a
missing catalog) calls `recover`, which removes the temporary files and folders of
processes of this host that are gone (and those of other hosts or containers, whose
processes cannot be checked, a day after they were last touched). Swapping in a folder
over an existing one is two renames, NAME → `.NAME.old-<pid>-<host>-<random>` then the
new folder → NAME; a run killed between them leaves no NAME, and `recover` puts the old
folder back, so an earlier catalog and its ledger are never lost: a killed run leaves
things as they were.

A path that is a symbolic link is written through: its target is replaced, the link
stays. A folder swapped in is readable by its owner only (0o700, its files 0o600): a
catalog holds original ids and raw dataviews, a release the released data. A file or
folder created inside an owner-only folder is owner-only too (the ledger of a catalog).

PRUDENCE_FAULT=<point>[:<signal>] sends this process SIGKILL (or the named signal, e.g.
`after-first-rename:TERM`) at `point` of a folder swap: `before-swap`,
`after-first-rename` or `after-swap`. It is a test hook, to force the kill windows.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import secrets
import shutil
import signal
import socket
import stat
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from prudence_cli.errors import PrudenceError

FAULT_VARIABLE = "PRUDENCE_FAULT"
# a leftover whose process cannot be checked is stale when untouched this long (seconds)
STALE_AFTER = 24 * 3600
_HOST = hashlib.sha256(socket.gethostname().encode()).hexdigest()[:8]
_OWNER = re.compile(r"(?P<pid>\d+)-(?P<host>[0-9a-f]{8})-")
_TEMPORARY = re.compile(r"(^|/)\.([^/]+?)\.(?:tmp|old)-\d+-[0-9a-f]{8}-[^/]*")


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _owner() -> str:
    """The part of a temporary name that says which process made it."""
    return f"{os.getpid()}-{_HOST}-"


def _is_stale(path: Path, rest: str) -> bool:
    """Whether the temporary `path`, whose name ends in `rest` (after `tmp-` or `old-`),
    was left by a run that is over: a process of this host that is gone; or, when the
    process cannot be checked (another host or container, an earlier version's name),
    one untouched for `STALE_AFTER`."""
    match = _OWNER.match(rest)
    if match is not None and match["host"] == _HOST:
        pid = int(match["pid"])
        if pid == os.getpid():
            return False
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        except OSError:  # PermissionError: alive, another user's
            return False
        return False
    try:
        return time.time() - path.lstat().st_mtime > STALE_AFTER
    except OSError:
        return False


def through_link(path: Path) -> Path:
    """`path`, or where it points when it is a symbolic link: outputs are written
    through a link, never over it."""
    path = Path(path)
    return path.resolve() if path.is_symlink() else path


def shown_path(path: object) -> str:
    """`path` for a message: a temporary name shown as the name it stands for."""
    return _TEMPORARY.sub(r"\1\2", os.fspath(path) if isinstance(path, os.PathLike) else str(path))


def is_private(folder: Path) -> bool:
    """Whether only its owner may enter or read `folder`."""
    try:
        return stat.S_IMODE(os.stat(folder).st_mode) & 0o077 == 0
    except OSError:
        return False


def make_folder(folder: Path) -> None:
    """`mkdir -p`, where a folder created inside an owner-only folder is owner-only."""
    folder = Path(folder)
    missing = []
    probe = folder
    while not probe.exists() and probe != probe.parent:
        missing.append(probe)
        probe = probe.parent
    private = is_private(probe)
    for path in reversed(missing):
        path.mkdir(exist_ok=True)
        if private:
            os.chmod(path, 0o700)


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        with contextlib.suppress(OSError):
            path.unlink()


def recover(target: Path) -> None:
    """Clean up what killed runs left next to `target`: put back a folder a swap moved
    aside and never replaced, and remove the temporary files and folders of processes
    that are over (`_is_stale`). Never fails: what cannot be listed is left alone."""
    target = Path(target)
    prefix = f".{target.name}."
    try:
        names = sorted(n for n in os.listdir(target.parent) if n.startswith(prefix))
    except OSError:
        return
    for name in names:
        kind, _, rest = name[len(prefix) :].partition("-")
        path = target.parent / name
        # an old folder without an owner is the layout of earlier releases: .NAME.old-*/previous
        legacy = kind == "old" and _OWNER.match(rest) is None and (path / "previous").is_dir()
        if kind not in ("tmp", "old") or not (legacy or _is_stale(path, rest)):
            continue
        with contextlib.suppress(OSError):
            if kind == "old" and not os.path.lexists(target):
                os.replace(path / "previous" if legacy else path, target)
        _remove(path)


def _fault(point: str) -> None:
    """The test hook of the module docstring."""
    wanted = os.environ.get(FAULT_VARIABLE, "")
    where, _, name = wanted.partition(":")
    if where == point:
        os.kill(os.getpid(), getattr(signal, f"SIG{name or 'KILL'}"))


def write_bytes_atomic(path: Path, data: bytes) -> None:
    path = through_link(path)
    make_folder(path.parent)
    recover(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.tmp-{_owner()}", dir=path.parent)
    try:
        if not is_private(path.parent):
            os.chmod(tmp, 0o666 & ~_umask())
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def write_text_atomic(path: Path, text: str) -> None:
    write_bytes_atomic(path, text.encode("utf-8"))


def check_writable(out: Path, folder: bool = True) -> None:
    """Before any work: PrudenceError naming `out` when it cannot be written — a file
    where a folder is expected (or the reverse, `folder=False`), or a place that takes no
    new file (read-only, not ours, a file on the way)."""
    target = through_link(out)
    if folder and target.exists() and not target.is_dir():
        raise PrudenceError(
            f"{out} is a file, and a folder is expected here; choose a folder name for --out"
        )
    if not folder and target.is_dir():
        raise PrudenceError(
            f"{out} is a folder, and a file is expected here; give a file name for --out"
        )
    where = target.parent
    while not where.exists() and where != where.parent:
        where = where.parent
    if not where.is_dir():
        raise PrudenceError(f"{out}: {where} is a file, not a folder; choose another --out")
    try:
        fd, probe = tempfile.mkstemp(prefix=f".{target.name}.tmp-{_owner()}", dir=where)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise PrudenceError(
            f"{out}: cannot write in {where} ({exc.strerror or exc}); choose another --out, "
            f"or make {where} writable"
        ) from None


def check_replaceable(target: Path, is_replaceable: Callable[[Path], bool]) -> None:
    """Before any work: put back what a killed run left (`recover`), then PrudenceError
    unless the folder `target` is new, empty or `is_replaceable`."""
    shown = Path(target)
    target = through_link(shown)
    recover(target)
    if target.exists() and not (
        target.is_dir() and (not any(target.iterdir()) or is_replaceable(target))
    ):
        raise PrudenceError(
            f"{shown} exists and is not a folder this command wrote; "
            "choose another output folder or remove it"
        )


def writes_as_its_owner(probe: str, name: str) -> bool:
    """Whether this process (a worker) sees the file `probe` and can write a file `name`
    beside it, owned by the probe's owner (the user who runs the command: a worker
    running as another user, or one reading a read-only mount, would write parts the
    catalog cannot make private, or none), the file removed again."""
    mine = os.path.join(os.path.dirname(probe), name)
    try:
        owner = os.stat(probe).st_uid
        with open(mine, "x"):
            pass
        try:
            return os.stat(mine).st_uid == owner
        finally:
            os.unlink(mine)
    except OSError:
        return False


def _make_private(folder: Path) -> None:
    os.chmod(folder, 0o700)
    for root, dirs, files in os.walk(folder):
        for name in dirs:
            os.chmod(os.path.join(root, name), 0o700)
        for name in files:
            os.chmod(os.path.join(root, name), 0o600)


@contextlib.contextmanager
def atomic_folder(
    target: Path, is_replaceable: Callable[[Path], bool], private: bool = True
) -> Iterator[Path]:
    """Yield a temporary folder that replaces `target` when the block succeeds; a
    `private` one (the default) becomes owner-only first.

    An existing `target` is replaced only if it is empty or `is_replaceable(target)`
    (e.g. it is an earlier catalog); otherwise PrudenceError, before any work.
    """
    check_replaceable(target, is_replaceable)
    target = through_link(target)
    make_folder(target.parent)
    # mkdtemp makes it owner-only: nothing in it is visible to others while it is built
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.tmp-{_owner()}", dir=target.parent))
    try:
        yield tmp
        if private:
            _make_private(tmp)
        else:
            os.chmod(tmp, 0o777 & ~_umask())
        _fault("before-swap")
        if target.exists():
            _swap(tmp, target)
        else:
            os.replace(tmp, target)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def _swap(new: Path, target: Path) -> None:
    """Replace the folder `target` by `new`: two renames, undone on an error between them
    (and by `recover` after a kill between them)."""
    old = target.parent / f".{target.name}.old-{_owner()}{secrets.token_hex(4)}"
    os.replace(target, old)
    try:
        _fault("after-first-rename")
        os.replace(new, target)
    except BaseException:
        if not os.path.lexists(target):
            os.replace(old, target)
        raise
    _fault("after-swap")
    shutil.rmtree(old, ignore_errors=True)
