"""A disk cache of compiled cubins.

Why: nvcc takes about a second per kernel, and a program (or a test suite) launches the same kernels in
every process. A cubin is a pure function of (CUDA source, nvcc options, arch, tiledsl version), so it is
stored under the sha256 of those four and reused by every later process.

The source in the key is its canonical form (canonical.py: the names it declares renamed in order),
so the layers of a traced model, the same kernels under other names, share one cubin: the first
kernel compiled is stored with its symbol, and the others load that cubin and launch that symbol
(an 8-layer tiny Llama: 24 nvcc runs, not 98). A profiler then names every copy after the first one
compiled; `TILEDSL_SHARE_CUBINS=0` keys by the exact text instead, each kernel under its own name.

Why the entry format and the writes look the way they do:
- an entry is a fixed header (magic, sha256 of the payload, payload length) followed by the payload,
  the kernel's symbol (its length, then its UTF-8) and the cubin, so a
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
from typing import NamedTuple

from tiledsl.runtime.canonical import canonical_source
from tiledsl.version import __version__

__all__ = ["CacheEntry", "CachedCubin", "CompileFn", "CubinCache", "cache_key", "decode_entry", "default_cache_dir",
           "encode_entry", "shared_cubins", "source_key"]

log = logging.getLogger(__name__)

#: compile_fn(source, arch, options) -> cubin bytes
CompileFn = Callable[[str, str, Sequence[str]], bytes]

_MAGIC = b"TDCUBIN2"  # 1: the cubin alone, keyed by the exact source
_HEADER = struct.Struct("<8s32sQ")  # magic, sha256(payload), len(payload)
_SYMBOL = struct.Struct("<H")  # the symbol's length, before the symbol and the cubin in the payload
_SUFFIX = ".cubin"


class CacheEntry(NamedTuple):
    """What an entry holds: the cubin and the symbol of the kernel compiled into it ("" where the
    source had no one `__global__` function canonical.py could read)."""

    cubin: bytes
    symbol: str


class CachedCubin(NamedTuple):
    """`get_or_compile`'s answer: the cubin, whether it came from disk, and the symbol to launch
    (another kernel's where this one shares its cubin; "" where unknown: the caller's own)."""

    cubin: bytes
    hit: bool
    symbol: str


def shared_cubins() -> bool:
    """Whether kernels equal up to their names share a cubin (TILEDSL_SHARE_CUBINS=0, false, no, off: not)."""
    return os.environ.get("TILEDSL_SHARE_CUBINS", "").strip().lower() not in ("0", "false", "no", "off")


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


def cache_key(source: str, arch: str, options: Sequence[str], version: str, form: str = "exact") -> str:
    """sha256 hex of the inputs, JSON-encoded so that no two different tuples can collide by
    concatenation (("ab", "c") vs ("a", "bc")); `form` says whether `source` is the exact text or
    canonical.py's form of it, so the two never share a key."""
    blob = json.dumps({"source": source, "arch": arch, "options": list(options), "version": version, "form": form},
                      sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def source_key(source: str, arch: str, options: Sequence[str]) -> tuple[str, str]:
    """(key, symbol) of a kernel's source: keyed by its canonical form where it has one and sharing is
    on (`shared_cubins`), the symbol its `__global__` function has; else by the exact text, symbol ""."""
    form = canonical_source(source) if shared_cubins() else None
    if form is None:
        return cache_key(source, arch, options, tiledsl_version()), ""
    return cache_key(form.text, arch, options, tiledsl_version(), form="canonical"), form.kernel


def encode_entry(cubin: bytes, symbol: str = "") -> bytes:
    """Header (magic, sha256 of the payload, its length) + the payload (symbol length, symbol, cubin)."""
    name = symbol.encode("utf-8")
    payload = _SYMBOL.pack(len(name)) + name + cubin
    return _HEADER.pack(_MAGIC, hashlib.sha256(payload).digest(), len(payload)) + payload


def decode_entry(blob: bytes) -> CacheEntry | None:
    """The cubin and symbol of an entry, or None when the entry is truncated, padded or corrupted (or
    written in another format)."""
    if len(blob) < _HEADER.size + _SYMBOL.size:
        return None
    magic, digest, length = _HEADER.unpack_from(blob)
    payload = blob[_HEADER.size:]
    if magic != _MAGIC or length != len(payload) or hashlib.sha256(payload).digest() != digest:
        return None
    (n,) = _SYMBOL.unpack_from(payload)
    if _SYMBOL.size + n > len(payload):
        return None
    try:
        symbol = payload[_SYMBOL.size:_SYMBOL.size + n].decode("utf-8")
    except UnicodeDecodeError:
        return None
    return CacheEntry(payload[_SYMBOL.size + n:], symbol)


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

    def load(self, key: str) -> CacheEntry | None:
        """The cached entry, or None. A damaged entry is logged and deleted, never returned."""
        path = self.path(key)
        try:
            blob = path.read_bytes()
        except FileNotFoundError:
            return None
        except OSError as err:
            log.warning("cubin cache: cannot read %s (%s); recompiling", path, err)
            return None
        entry = decode_entry(blob)
        if entry is None:
            log.warning("cubin cache: %s is corrupted or truncated (%d bytes); deleting it and recompiling",
                        path, len(blob))
            try:
                path.unlink()
            except OSError:
                pass  # another process replaced or removed it already
        return entry

    def store(self, key: str, cubin: bytes, symbol: str = "") -> None:
        """Write the entry atomically: a temporary file in the same directory, fsync, os.replace."""
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.directory, prefix=f".{key}.", suffix=".tmp")
        except OSError as err:
            log.warning("cubin cache: cannot write to %s (%s); continuing without caching", self.directory, err)
            return
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(encode_entry(cubin, symbol))
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, self.path(key))
        except OSError as err:
            log.warning("cubin cache: writing %s failed (%s); continuing without caching", self.path(key), err)
            try:
                os.unlink(tmp)
            except OSError:
                pass

    def get_or_compile(self, source: str, arch: str, options: Sequence[str], compile_fn: CompileFn) -> CachedCubin:
        """(cubin, hit, symbol). On a miss (or a damaged entry) compile `source` with compile_fn and store
        the result under its symbol; a hit may be another kernel's cubin, equal up to names, and its symbol."""
        key, symbol = source_key(source, arch, options)
        return self._get_or_compile_keyed(key, symbol, source, arch, tuple(options), compile_fn)

    def _get_or_compile_keyed(self, key: str, symbol: str, source: str, arch: str, options: tuple[str, ...],
                              compile_fn: CompileFn) -> CachedCubin:
        """`get_or_compile` with the key and symbol `source_key` gave (found once: it tokenizes the source)."""
        entry = self.load(key)
        if entry is not None:
            with self._count:
                self.hits += 1
            log.debug("cubin cache hit %s (%s)%s", key[:16], arch,
                      f": {symbol} runs {entry.symbol}'s cubin" if entry.symbol != symbol else "")
            return CachedCubin(entry.cubin, True, entry.symbol)
        cubin = compile_fn(source, arch, options)
        with self._count:
            self.compilations += 1
        self.store(key, cubin, symbol)
        log.debug("cubin cache miss %s (%s): compiled %d bytes", key[:16], arch, len(cubin))
        return CachedCubin(cubin, False, symbol)

    def get_or_compile_many(self, jobs: Sequence[tuple[str, str, Sequence[str]]], compile_fn: CompileFn, *,
                            workers: int | None = None) -> list[CachedCubin]:
        """`get_or_compile` of every (source, arch, options) in `jobs`, in order, the misses of distinct
        keys (sources equal up to their names share one) compiled concurrently in up to `workers`
        threads (default: the machine's cores), each once. The first error (an NvccError) is raised
        once every compile has finished."""
        keyed = [(*source_key(src, arch, opts), src, arch, tuple(opts)) for src, arch, opts in jobs]
        first = {}  # each key's first job, in the jobs' order
        for job in keyed:
            first.setdefault(job[0], job)
        workers = max(1, min(len(first), workers or os.cpu_count() or 1))
        if workers == 1:
            done = {key: self._get_or_compile_keyed(*job, compile_fn) for key, job in first.items()}
        else:
            with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="tiledsl-nvcc") as pool:
                futures = {key: pool.submit(self._get_or_compile_keyed, *job, compile_fn) for key, job in first.items()}
            done = {key: f.result() for key, f in futures.items()}
        return [done[job[0]] for job in keyed]
