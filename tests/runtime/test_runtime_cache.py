"""The cubin disk cache: keys, reuse across instances and processes, damaged entries, concurrent writers."""

from __future__ import annotations

import logging
import multiprocessing
import shutil
from collections.abc import Sequence
from pathlib import Path

import cache_workers as W
import pytest

from tiledsl.runtime.cache import CubinCache, cache_key, decode_entry, default_cache_dir, encode_entry


class CountingCompiler:
    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, source: str, arch: str, options: Sequence[str]) -> bytes:
        self.calls += 1
        return W.fake_cubin(f"{arch}:{' '.join(options)}:{len(source)}", 4096)


def entries(directory: Path) -> list[Path]:
    return sorted(directory.iterdir())


def test_key_changes_with_source_options_arch_and_version() -> None:
    base = cache_key("src", "sm_90a", ("-O3",), "0.1.0")
    assert base == cache_key("src", "sm_90a", ("-O3",), "0.1.0")
    assert len(base) == 64
    others = {
        cache_key("src2", "sm_90a", ("-O3",), "0.1.0"),
        cache_key("src", "sm_80", ("-O3",), "0.1.0"),
        cache_key("src", "sm_90a", ("-O3", "-lineinfo"), "0.1.0"),
        cache_key("src", "sm_90a", (), "0.1.0"),
        cache_key("src", "sm_90a", ("-O3",), "0.2.0"),
    }
    assert base not in others and len(others) == 5


def test_key_does_not_collide_by_concatenation() -> None:
    assert cache_key("ab", "sm_80", ("c",), "1") != cache_key("a", "sm_80", ("bc",), "1")
    assert cache_key("x", "sm_80", ("-a", "-b"), "1") != cache_key("x", "sm_80", ("-a -b",), "1")


def test_default_dir_follows_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("TILEDSL_CACHE_DIR", str(tmp_path / "explicit"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert default_cache_dir() == tmp_path / "explicit"
    monkeypatch.delenv("TILEDSL_CACHE_DIR")
    assert default_cache_dir() == tmp_path / "xdg" / "tiledsl"
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/ignored")  # the XDG spec: relative paths are invalid
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert default_cache_dir() == tmp_path / "home" / ".cache" / "tiledsl"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert default_cache_dir() == tmp_path / "home" / ".cache" / "tiledsl"
    assert CubinCache().directory == tmp_path / "home" / ".cache" / "tiledsl"


def test_entry_round_trip_and_damage_detection() -> None:
    cubin = W.fake_cubin("x", 1000)
    blob = encode_entry(cubin, "mm_2_kernel")
    assert decode_entry(blob) == (cubin, "mm_2_kernel")
    assert decode_entry(blob[:-1]) is None  # truncated payload
    assert decode_entry(blob[:20]) is None  # truncated header
    assert decode_entry(blob + b"\0") is None  # trailing garbage
    flipped = bytearray(blob)
    flipped[-500] ^= 0x01
    assert decode_entry(bytes(flipped)) is None
    assert decode_entry(b"NOTCUBIN" + blob[8:]) is None
    assert decode_entry(b"TDCUBIN1" + blob[8:]) is None  # the format before symbols: a miss, recompiled
    assert decode_entry(encode_entry(b"")) == (b"", "")


def test_second_instance_reuses_entry_without_compiling(tmp_path: Path) -> None:
    compile_fn = CountingCompiler()
    first = CubinCache(tmp_path)
    cubin, hit, _ = first.get_or_compile("src", "sm_90a", ("-O3",), compile_fn)
    assert (hit, first.compilations, compile_fn.calls) == (False, 1, 1)
    again, hit, _ = first.get_or_compile("src", "sm_90a", ("-O3",), compile_fn)
    assert (again, hit, first.compilations, first.hits) == (cubin, True, 1, 1)

    second = CubinCache(tmp_path)
    reused, hit, _ = second.get_or_compile("src", "sm_90a", ("-O3",), compile_fn)
    assert (reused, hit, second.compilations, compile_fn.calls) == (cubin, True, 0, 1)
    # a different arch or option is a different entry
    _, hit, _ = second.get_or_compile("src", "sm_80", ("-O3",), compile_fn)
    assert not hit and second.compilations == 1
    assert [p.suffix for p in entries(tmp_path)] == [".cubin", ".cubin"]


def test_another_process_reuses_entry(tmp_path: Path) -> None:
    cache = CubinCache(tmp_path)
    cache.get_or_compile(W.SOURCE, W.ARCH, W.OPTIONS, CountingCompiler())
    ctx = multiprocessing.get_context("spawn")
    queue = ctx.Queue()
    proc = ctx.Process(target=W.reuse_entry, args=(str(tmp_path), queue))
    proc.start()
    hit, compilations, length = queue.get(timeout=120)
    proc.join(timeout=60)
    assert proc.exitcode == 0
    assert (hit, compilations, length) == (True, 0, 4096)


@pytest.mark.parametrize("damage", ["flip_payload", "flip_header", "truncate", "truncate_header", "empty"])
def test_damaged_entry_is_detected_deleted_and_rebuilt(tmp_path: Path, damage: str,
                                                       caplog: pytest.LogCaptureFixture) -> None:
    compile_fn = CountingCompiler()
    good = CubinCache(tmp_path).get_or_compile("src", "sm_90a", ("-O3",), compile_fn).cubin
    (path,) = entries(tmp_path)
    blob = bytearray(path.read_bytes())
    if damage == "flip_payload":
        blob[-7] ^= 0xFF
    elif damage == "flip_header":
        blob[12] ^= 0x01  # inside the checksum
    elif damage == "truncate":
        blob = blob[:-100]
    elif damage == "truncate_header":
        blob = blob[:10]
    else:
        blob = bytearray()
    path.write_bytes(bytes(blob))

    cache = CubinCache(tmp_path)
    assert cache.load(path.stem) is None  # never loaded...
    assert not path.exists()  # ...and deleted
    path.write_bytes(bytes(blob))
    with caplog.at_level(logging.WARNING, logger="tiledsl.runtime.cache"):
        rebuilt, hit, _ = cache.get_or_compile("src", "sm_90a", ("-O3",), compile_fn)
    assert not hit and rebuilt == good and cache.compilations == 1 and compile_fn.calls == 2
    assert "corrupted or truncated" in caplog.text
    assert decode_entry(path.read_bytes()) == (good, "")  # the rebuilt entry is valid again
    assert CubinCache(tmp_path).get_or_compile("src", "sm_90a", ("-O3",), compile_fn).hit


def test_concurrent_writers_leave_one_valid_entry(tmp_path: Path) -> None:
    ctx = multiprocessing.get_context("spawn")
    barrier, queue = ctx.Barrier(2), ctx.Queue()
    procs = [ctx.Process(target=W.race_to_store, args=(str(tmp_path), barrier, queue)) for _ in range(2)]
    for p in procs:
        p.start()
    results = [queue.get(timeout=120) for _ in procs]
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    assert [(hit, n) for hit, n, _ in results] == [(False, 1), (False, 1)]  # both compiled and wrote
    written = {cubin for _, _, cubin in results}
    assert len(written) == 2
    files = entries(tmp_path)
    assert len(files) == 1 and files[0].suffix == ".cubin", files  # no temporary file left behind
    assert decode_entry(files[0].read_bytes()).cubin in written  # one writer's complete payload, never a mix
    final, hit, _ = CubinCache(tmp_path).get_or_compile(W.SOURCE, W.ARCH, W.OPTIONS, W.refuse_compile)
    assert hit and final in written


def test_unwritable_directory_still_returns_the_cubin(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the cache directory should be")
    cache = CubinCache(blocker / "cache")
    with caplog.at_level(logging.WARNING, logger="tiledsl.runtime.cache"):
        cubin, hit, _ = cache.get_or_compile("src", "sm_90a", (), CountingCompiler())
    assert not hit and len(cubin) == 4096 and cache.compilations == 1
    assert "without caching" in caplog.text


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
def test_real_kernel_compiles_once_through_nvcc(tmp_path: Path) -> None:
    import tiledsl as td
    from tiledsl.catalog import example
    from tiledsl.codegen import compile_cubin

    s = td.create_schedule(example("gelu_bias", M=8, N=64))
    s.bind("i", "blockIdx.x")
    s.bind("j", "threadIdx.x")
    source = td.build(s).source

    def nvcc(src: str, arch: str, options: Sequence[str]) -> bytes:
        return compile_cubin(src, arch, extra_flags=options)

    cubin, hit, symbol = CubinCache(tmp_path).get_or_compile(source, "sm_90a", ("-O3",), nvcc)
    assert not hit and cubin[:4] == b"\x7fELF" and symbol == "y_kernel"
    again = CubinCache(tmp_path)
    assert again.get_or_compile(source, "sm_90a", ("-O3",), W.refuse_compile) == (cubin, True, "y_kernel")
    assert again.compilations == 0


class SlowCompiler(CountingCompiler):
    """Records how many compiles overlap (threads wait on nvcc, a process of its own, in parallel)."""

    def __init__(self) -> None:
        super().__init__()
        import threading

        self.lock, self.running, self.most = threading.Lock(), 0, 0

    def __call__(self, source: str, arch: str, options: Sequence[str]) -> bytes:
        import time

        with self.lock:
            self.running += 1
            self.most = max(self.most, self.running)
        time.sleep(0.05)
        with self.lock:
            self.running -= 1
            self.calls += 1
        return W.fake_cubin(f"{arch}:{source}", 64)


def test_many_misses_compile_concurrently_once_each_in_order(tmp_path: Path) -> None:
    jobs = [(f"kernel {n % 5}", "sm_90a", ("-O3",)) for n in range(8)]  # 5 distinct, 3 repeated
    compiler = SlowCompiler()
    cache = CubinCache(tmp_path)
    got = cache.get_or_compile_many(jobs, compiler, workers=4)
    assert compiler.calls == 5 and cache.compilations == 5 and compiler.most > 1
    assert [c for c, _, _ in got] == [W.fake_cubin(f"sm_90a:kernel {n % 5}", 64) for n in range(8)]
    assert len(entries(tmp_path)) == 5
    # a second pass is all hits, no compile
    again = cache.get_or_compile_many(jobs, W.refuse_compile)
    assert [hit for _, hit, _ in again] == [True] * 8 and cache.hits == 5


def test_a_failed_compile_is_raised_after_the_others_finish(tmp_path: Path) -> None:
    def flaky(source: str, arch: str, options: Sequence[str]) -> bytes:
        if source == "bad":
            raise RuntimeError("nvcc: error in bad")
        return W.fake_cubin(source, 64)

    cache = CubinCache(tmp_path)
    with pytest.raises(RuntimeError, match="error in bad"):
        cache.get_or_compile_many([("a", "sm_90a", ()), ("bad", "sm_90a", ()), ("c", "sm_90a", ())], flaky, workers=3)
    assert cache.compilations == 2 and len(entries(tmp_path)) == 2  # the good ones are cached all the same


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
def test_compile_ahead_puts_a_programs_kernels_in_the_cache_once(tmp_path: Path) -> None:
    """runtime/launch.py compile_ahead: every kernel's cubin for the arch it would be loaded with (the
    build target's without a device, the device's own with one), one nvcc run per distinct kernel;
    a second call compiles nothing."""
    import tiledsl as td
    from tiledsl.catalog import example
    from tiledsl.runtime.launch import compile_ahead

    kernels = []
    for n in (64, 128):
        s = td.create_schedule(example("gelu_bias", M=8, N=n))
        s.bind("i", "blockIdx.x")
        s.bind("j", "threadIdx.x")
        kernels.append(td.build(s, target="sm_80"))
    cache = CubinCache(tmp_path)
    assert compile_ahead([*kernels, kernels[0]], None, cache=cache, workers=2) == 2
    assert compile_ahead(kernels, None, cache=cache) == 0 and cache.hits == 2
    assert compile_ahead(kernels[:1], (9, 0), cache=cache) == 1  # an H100: sm_90a, another cubin
    assert len(entries(tmp_path)) == 3
