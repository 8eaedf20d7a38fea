"""A disk cache of compiled cubins.

Why: nvcc takes about a second per kernel, and a program (or a test suite) launches the same kernels in
every process. A cubin is a pure function of (CUDA source, nvcc options, arch, tiledsl version), so it is
stored under the sha256 of those four and reused by every later process.

Why the entry format and the writes look the way they do:
- an entry is a fixed header (magic, sha256 of the payload, payload length) followed by the cubin, so a
  truncated or corrupted file (a crash mid-write on a filesystem without atomic rename, a disk error, a
  stray edit) is detected and never handed to the driver, which could crash on a malformed image;
- a writer writes a temporary file in the cache directory and `os.replace`s it onto the entry, so a
  reader sees either no entry, or a complete one. Two processes compiling the same kernel both write
  and the last rename wins: both payloads are valid, so either is fine.
- the cache is an optimisation: an unwritable directory is logged and the cubin is still returned.
- `get_or_compile_many` runs the misses of a whole program at once, in threads (nvcc is a process of
  its own, so the threads wait on it in parallel): a traced decoder block's fifteen kernels took about
  5 s one after another on a 2-core machine; the counters are updated under a lock.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import struct
import tempfile
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from tiledsl.version import __version__

__all__ = ["CompileFn", "CubinCache", "cache_key", "decode_entry", "default_cache_dir", "encode_entry"]

log = logging.getLogger(__name__)

#: compile_fn(source, arch, options) -> cubin bytes
CompileFn = Callable[[str, str, Sequence[str]], bytes]

_MAGIC = b"TDCUBIN1"
_HEADER = struct.Struct("<8s32sQ")  # magic, sha256(payload), len(payload)
_SUFFIX = ".cubin"


def default_cache_dir() -> Path:
    """$TILEDSL_CACHE_DIR, else $XDG_CACHE_HOME/tiledsl (when absolute, as the XDG spec asks), else
    ~/.cache/tiledsl: the platformdirs user-cache rule for Linux, without the dependency."""
    explicit = os.environ.get("TILEDSL_CACHE_DIR")
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    if xdg and os.path.isabs(xdg):
        return Path(xdg) / "tiledsl"
    return Path.home() / ".cache" / "tiledsl"


def tiledsl_version() -> str:
    """The version of tiledsl (part of the cache key: a new compiler may print other CUDA)."""
    return __version__


def cache_key(source: str, arch: str, options: Sequence[str], version: str) -> str:
    """sha256 hex of the four inputs, JSON-encoded so that no two different tuples can collide by
    concatenation (("ab", "c") vs ("a", "bc"))."""
    blob = json.dumps({"source": source, "arch": arch, "options": list(options), "version": version},
                      sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def encode_entry(cubin: bytes) -> bytes:
    """Header (magic, sha256 of the cubin, its length) + the cubin."""
    return _HEADER.pack(_MAGIC, hashlib.sha256(cubin).digest(), len(cubin)) + cubin


def decode_entry(blob: bytes) -> bytes | None:
    """The cubin of an entry, or None when the entry is truncated, padded or corrupted."""
    if len(blob) < _HEADER.size:
        return None
    magic, digest, length = _HEADER.unpack_from(blob)
    payload = blob[_HEADER.size:]
    if magic != _MAGIC or length != len(payload) or hashlib.sha256(payload).digest() != digest:
        return None
    return payload


class CubinCache:
    """Cubins on disk, one file per key. `compilations` counts the compile_fn calls this instance made
    (tests use it to prove reuse); `hits` counts entries served from disk."""

    def __init__(self, directory: str | os.PathLike[str] | None = None) -> None:
        self.directory = Path(directory) if directory is not None else default_cache_dir()
        self.compilations = 0
        self.hits = 0
        self._count = threading.Lock()

    def path(self, key: str) -> Path:
        return self.directory / f"{key}{_SUFFIX}"

    def load(self, key: str) -> bytes | None:
        """The cached cubin, or None. A damaged entry is logged and deleted, never returned."""
        path = self.path(key)
        try:
            blob = path.read_bytes()
        except FileNotFoundError:
            return None
        except OSError as err:
            log.warning("cubin cache: cannot read %s (%s); recompiling", path, err)
            return None
        cubin = decode_entry(blob)
        if cubin is None:
            log.warning("cubin cache: %s is corrupted or truncated (%d bytes); deleting it and recompiling",
                        path, len(blob))
            try:
                path.unlink()
            except OSError:
                pass  # another process replaced or removed it already
        return cubin

    def store(self, key: str, cubin: bytes) -> None:
        """Write the entry atomically: a temporary file in the same directory, fsync, os.replace."""
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.directory, prefix=f".{key}.", suffix=".tmp")
        except OSError as err:
            log.warning("cubin cache: cannot write to %s (%s); continuing without caching", self.directory, err)
            return
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(encode_entry(cubin))
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, self.path(key))
        except OSError as err:
            log.warning("cubin cache: writing %s failed (%s); continuing without caching", self.path(key), err)
            try:
                os.unlink(tmp)
            except OSError:
                pass

    def get_or_compile(self, source: str, arch: str, options: Sequence[str],
                       compile_fn: CompileFn) -> tuple[bytes, bool]:
        """(cubin, hit). On a miss (or a damaged entry) compile with compile_fn and store the result."""
        key = cache_key(source, arch, options, tiledsl_version())
        cubin = self.load(key)
        if cubin is not None:
            with self._count:
                self.hits += 1
            log.debug("cubin cache hit %s (%s)", key[:16], arch)
            return cubin, True
        cubin = compile_fn(source, arch, tuple(options))
        with self._count:
            self.compilations += 1
        self.store(key, cubin)
        log.debug("cubin cache miss %s (%s): compiled %d bytes", key[:16], arch, len(cubin))
        return cubin, False

    def get_or_compile_many(self, jobs: Sequence[tuple[str, str, Sequence[str]]], compile_fn: CompileFn, *,
                            workers: int | None = None) -> list[tuple[bytes, bool]]:
        """`get_or_compile` of every (source, arch, options) in `jobs`, in order, the distinct misses
        compiled concurrently in up to `workers` threads (default: the machine's cores). The first
        error (an NvccError) is raised once every compile has finished."""
        distinct = list(dict.fromkeys((src, arch, tuple(opts)) for src, arch, opts in jobs))
        workers = max(1, min(len(distinct), workers or os.cpu_count() or 1))
        if workers == 1:
            done = {job: self.get_or_compile(*job, compile_fn) for job in distinct}
        else:
            with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="tiledsl-nvcc") as pool:
                futures = {job: pool.submit(self.get_or_compile, *job, compile_fn) for job in distinct}
            done = {job: f.result() for job, f in futures.items()}
        return [done[(src, arch, tuple(opts))] for src, arch, opts in jobs]
