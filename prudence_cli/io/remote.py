"""An input in an object store: `input.path` as a URL (s3://, gs://, az://, hdfs://, ...).

A cluster's machines seldom share a file system; the data they read lies in an object
store. `input.path` may name one by fsspec's URL — a prefix (read as a folder is: every
data file under it, leaving out hidden and bookkeeping objects as io.dataset does), a
glob pattern, or one object. The store's fsspec package must be installed (s3fs, gcsfs,
adlfs, ...). Credentials come from the environment, as the store's own tools take them
(AWS_ACCESS_KEY_ID or AWS_PROFILE, GOOGLE_APPLICATION_CREDENTIALS, ...); the config's
`input.storage_options` passes settings to the filesystem (endpoint_url, anon,
requester_pays, ...) but never a credential: the config is recorded in the catalog.

Each file is fetched whole into a local folder and hashed as it comes (the catalog
records its sha256), read there as a local file is, and removed once read: the disk
holds one file at a time. On a Dask cluster each worker fetches the files it reads.
Messages name the URL, with the line, as they name a local file.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import re
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from prudence_cli.errors import InputError, PrudenceError
from prudence_cli.io.dataset import DATA_SUFFIXES, bookkeeping, is_parquet

_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]+)://")
_PATTERN = frozenset("*?[")
_BLOCK = 8 << 20  # bytes fetched at a time
HEAD = 1 << 20  # bytes of a CSV file fetched to read its header
_PACKAGES = {"s3": "s3fs", "gs": "gcsfs", "gcs": "gcsfs", "az": "adlfs", "abfs": "adlfs"}
_NO_SECRET = (None, "anon", "google_default", "cloud")
# storage options that hold or name credentials: refused in a config (recorded in the
# catalog), to be set in the environment instead
_SECRET = re.compile(r"key|secret|token|password|credential|sas|connection_string", re.I)
# the query parameters of a signed URL (S3's, Google's, Azure's SAS): its credentials
_SIGNED = re.compile(r"signature|^sig$|^se$|^sv$|^sp$|key|credential|token|expires", re.I)


def secrets_in_url(url: str) -> str | None:
    """What in `url` is a credential — a password (`user:pass@host`) or the signature of
    a signed URL — or None."""
    from urllib.parse import parse_qsl, urlsplit

    parts = urlsplit(url)
    if parts.password is not None:
        return "a password (user:password@)"
    signed = [name for name, _ in parse_qsl(parts.query) if _SIGNED.search(name)]
    if signed:
        return f"the signature of a signed URL ({', '.join(signed[:3])})"
    return None


def is_url(text: str) -> bool:
    """Whether `text` names an object by URL (`s3://...`) rather than a local path;
    `file://` names a local one."""
    found = _SCHEME.match(text)
    return found is not None and found.group(1).lower() != "file"


def local_path(text: str) -> str:
    """`text` without a `file://` scheme."""
    return text[len("file://") :] if text.lower().startswith("file://") else text


def needed_package(url: str) -> str | None:
    """What is missing to read `url`: the message of fsspec naming the package to
    install, or that the protocol is unknown; None when it can be read."""
    protocol = url.split("://", 1)[0].lower()
    package = _PACKAGES.get(protocol, "the fsspec package of that store")
    try:
        import fsspec
    except ImportError:
        return f"reading {protocol}:// needs fsspec and {package}: pip install {package}"
    try:
        fsspec.get_filesystem_class(protocol)
    except ImportError as exc:
        return f"reading {protocol}:// needs a package not installed here: {exc}"
    except ValueError:
        return f"{protocol}:// is not a protocol fsspec knows (s3://, gs://, az://, hdfs://...)"
    return None


def secret_options(options: Mapping[str, Any], key: str = "") -> list[str]:
    """The key paths of `options` (nested mappings too) that look like credentials, or
    hold a URL that carries one; a value that names a way to find them (gcsfs's
    `token: anon`) is not one."""
    found = []
    for name, value in options.items():
        path = f"{key}.{name}" if key else str(name)
        named = _SECRET.search(str(name)) is not None and value not in _NO_SECRET
        carried = isinstance(value, str) and "://" in value and secrets_in_url(value)
        if named or carried:
            found.append(path)
        elif isinstance(value, Mapping):
            found.extend(secret_options(value, path))
    return found


@dataclass(frozen=True)
class Store:
    """Where an input lies: its URL and the filesystem's options (`storage_options`)."""

    url: str
    # hashed by URL alone: an option's value may be a mapping (client_kwargs)
    options: tuple[tuple[str, Any], ...] = field(default=(), hash=False)

    @property
    def name(self) -> str:
        """The last part of the URL, as a file's name is shown."""
        return PurePosixPath(self.url.partition("://")[2]).name or self.url

    def filesystem(self, url: str | None = None) -> tuple[Any, str]:
        """The fsspec filesystem and the path in it of `url` (default: the store's).
        fsspec keeps one per settings for the life of the process (a Dask worker's
        across runs), and with it what it listed, sizes included: that is forgotten
        first, never read stale. (A new one per file costs its client: 0.2 s a file.)"""
        import fsspec.core

        fs, path = fsspec.core.url_to_fs(url or self.url, **dict(self.options))
        fs.invalidate_cache()
        return fs, str(path)


@dataclass(frozen=True)
class RemoteFile:
    """One object of a store, as listed: its URL and size."""

    store: Store
    url: str
    size: int

    @property
    def name(self) -> str:
        return PurePosixPath(self.url.partition("://")[2]).name

    @property
    def is_parquet(self) -> bool:
        return is_parquet(self.name)


@dataclass(frozen=True)
class Fetched:
    """A local copy of a remote file, and the sha256 and size of what was fetched."""

    path: Path
    sha256: str
    size: int


class StoreError(InputError):
    """The store did not give a file: it names none, access is denied, no credentials,
    no answer (as opposed to a file given that is unusable)."""


@contextmanager
def reaching(url: str) -> Iterator[None]:
    """What the store raises, as an InputError naming `url` and what to check. (Each
    filesystem has its own errors — botocore's, aiohttp's, OSError's — so any error
    but ours is taken as the store's.)"""
    try:
        yield
    except PrudenceError:
        raise
    except FileNotFoundError:
        raise StoreError(
            url, "no such object or prefix in the store (or no such bucket): check the URL"
        ) from None
    except PermissionError as exc:
        raise StoreError(
            url,
            f"access denied ({_reason(exc)}); give the credentials in the environment "
            "(e.g. AWS_PROFILE or AWS_ACCESS_KEY_ID, GOOGLE_APPLICATION_CREDENTIALS)",
        ) from None
    except Exception as exc:  # noqa: BLE001 - each store raises its own
        if type(exc).__name__ == "FileExpired":  # fsspec's: replaced while being read
            raise StoreError(
                url, "changed in the store while it was read: run again once it is complete"
            ) from None
        timeout = "Timeout" in type(exc).__name__
        raise StoreError(
            url,
            f"cannot be read from the store ({_reason(exc)}); check the URL, "
            "input.storage_options and the credentials in the environment"
            + (
                " (a store slow to answer: see the timeouts of input.storage_options in "
                "docs/config.md)"
                if timeout
                else ""
            ),
        ) from None


def _reason(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return f"{type(exc).__name__}: {text}" if type(exc).__name__ not in text else text


def listed(store: Store) -> tuple[RemoteFile, ...]:
    """The files `store.url` names, in URL order (see the module docstring); InputError
    when it names none or cannot be listed."""
    with reaching(store.url):
        fs, root = store.filesystem()
        if any(c in _PATTERN for c in root) and not fs.exists(root):  # `part [1].csv`: a name
            fixed = root[: min(root.index(c) for c in _PATTERN if c in root)].rsplit("/", 1)[0]
            named = any(bookkeeping(p) for p in PurePosixPath(root[len(fixed) :]).parts)
            found: Mapping[str, Any] = fs.glob(root, detail=True)
            what = "matches no object; input.path names an object, a prefix or a glob pattern"
        elif fs.isdir(root):
            fixed, named = root.rstrip("/"), False
            found = {
                p: info
                for p, info in fs.find(root, detail=True).items()
                if p.lower().endswith(DATA_SUFFIXES)
            }
            what = (
                "is a prefix with no data file under it: input.path reads every "
                f"{', '.join(DATA_SUFFIXES)} object under a prefix"
            )
        else:
            info = fs.info(root)
            return (RemoteFile(store, fs.unstrip_protocol(root), int(info["size"])),)
        files = tuple(
            RemoteFile(store, fs.unstrip_protocol(p), _size(fs, p, info))
            for p, info in sorted(found.items())
            if info.get("type", "file") == "file"
            and (named or not any(bookkeeping(q) for q in PurePosixPath(p[len(fixed) :]).parts))
        )
    if not files:
        raise InputError(store.url, what)
    return files


def _size(fs: Any, path: str, info: Mapping[str, Any]) -> int:
    """A listed file's size; a listing that gives none (an HTTP index page) is asked
    the file's own (its Content-Length)."""
    size = info.get("size")
    if size is None:
        size = fs.size(path)
    return int(size or 0)


@contextmanager
def fetched(
    file: RemoteFile, folder: Path, progress: Callable[[int, int], None] | None = None
) -> Iterator[Fetched]:
    """`file` fetched into `folder` (`fetch`), removed when the block ends. Errors
    raised in the block that name the local copy name the URL instead (`named`)."""
    copy = fetch(file, folder, progress)
    try:
        with named(copy.path, file.url):
            yield copy
    finally:
        copy.path.unlink(missing_ok=True)


def fetch(
    file: RemoteFile, folder: Path, progress: Callable[[int, int], None] | None = None
) -> Fetched:
    """`file` copied into `folder` under a new name, hashed as it comes (nothing is left
    of a fetch that fails); `progress` hears the bytes fetched and the size. The caller
    removes the copy."""
    local = _local_name(file, folder)
    digest, done = hashlib.sha256(), 0
    try:
        # only what the store raises is the store's: a full local disk is said as such
        with _writing(file, folder), open(local, "wb") as copy, _opened(file) as source:
            while True:
                with reaching(file.url):
                    block = source.read(_BLOCK)
                if not block:
                    break
                digest.update(block)
                copy.write(block)
                done += len(block)
                if progress is not None:
                    progress(done, max(file.size, done))
    except BaseException:
        local.unlink(missing_ok=True)
        raise
    return Fetched(local, digest.hexdigest(), done)


@contextmanager
def _writing(file: RemoteFile, folder: Path) -> Iterator[None]:
    """A local disk too full for the copy of `file`, said with where and what to do."""
    try:
        yield
    except OSError as exc:
        if exc.errno != errno.ENOSPC:
            raise
        raise InputError(
            file.url,
            f"cannot be fetched into {folder}: no space left on that disk. Each file of the "
            "input is fetched whole, one at a time: set TMPDIR (or a Dask worker's "
            "--local-directory) to a disk with room for the largest",
        ) from None


@contextmanager
def _opened(file: RemoteFile) -> Iterator[Any]:
    """`file` opened for reading in its store."""
    with reaching(file.url):
        fs, path = file.store.filesystem(file.url)
        source = fs.open(path, "rb")
    try:
        yield source
    finally:
        with contextlib.suppress(Exception):  # closing a read stream loses nothing
            source.close()


def _local_name(file: RemoteFile, folder: Path) -> Path:
    """A new name in `folder` for a copy of `file`, ending as its name does (.csv.gz,
    .parquet: how the readers know it), whatever its length."""
    ends = [s for s in PurePosixPath(file.name).suffixes[-2:] if len(s) <= 12]
    return folder / (uuid.uuid4().hex + "".join(ends))


def header(file: RemoteFile, delimiter: str) -> list[str]:
    """The column names of `file`, as io.text.read_header reads a local file's: a CSV
    file's from its first `HEAD` bytes, a Parquet file's from its schema (read in place:
    it is at the file's end)."""
    import tempfile

    import pyarrow as pa
    import pyarrow.parquet as pq

    from prudence_cli.io.text import read_header

    with reaching(file.url):
        fs, path = file.store.filesystem(file.url)
        if file.is_parquet:
            try:
                with fs.open(path, "rb") as handle:
                    return list(pq.read_schema(handle).names)
            except pa.ArrowException as exc:
                raise InputError(file.url, f"is not a Parquet file: {exc}") from None
        first = fs.cat_file(path, start=0, end=min(file.size, HEAD))
    with tempfile.TemporaryDirectory(prefix="prudence-head-") as folder:
        local = _local_name(file, Path(folder))
        local.write_bytes(first)
        with named(local, file.url):
            return read_header(local, delimiter)


@contextmanager
def named(local: Path, url: str) -> Iterator[None]:
    """An InputError naming the local copy `local`, raised again naming `url`."""
    try:
        yield
    except InputError as exc:
        if exc.file != local:
            raise
        reason = exc.reason.replace(str(local), url)
        raise type(exc)(url, reason, exc.line) from None
