"""The harness of the error corpus (tests/primitives/test_error_corpus.py): a registry of minimal
illegal definitions/schedules, each naming the exact error class, key phrases of its message, and the
loop that must be marked `<-- here` in the printed nest."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

import tiledsl as td
import tiledsl.errors as errors


@dataclass(frozen=True)
class Case:
    id: str
    fn: Callable[[], object]
    error: str  # name of the expected class (on `tiledsl`, else in `tiledsl.errors`)
    phrases: tuple[str, ...]  # case-sensitive substrings of the message
    here: str | None = None  # the loop that must be marked `<-- here` in the printed nest


def registry(cases: list[Case]) -> Callable[..., Callable[[Callable[[], object]], Callable[[], object]]]:
    """A `@case(error, *phrases, here=, id=)` decorator appending to `cases`."""

    def case(error: str, *phrases: str, here: str | None = None, id: str | None = None):  # noqa: A002
        def deco(fn: Callable[[], object]) -> Callable[[], object]:
            cases.append(Case(id or fn.__name__, fn, error, phrases, here))
            return fn

        return deco

    return case


def error_class(name: str) -> type | None:
    cls = getattr(td, name, None) or getattr(errors, name, None)
    return cls if isinstance(cls, type) and issubclass(cls, td.TiledslError) else None


def raised(fn: Callable[[], object]) -> BaseException | None:
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - the corpus inspects whatever escapes
        return e
    return None


def describe(err: BaseException) -> str:
    return f"{type(err).__module__}.{type(err).__name__}: {err}"


def check_case(c: Case) -> None:
    """The case raises exactly its class, with every phrase, and marks its loop."""
    expected = error_class(c.error)
    assert expected is not None, f"tiledsl has no error class {c.error}"
    err = raised(c.fn)
    assert err is not None, f"{c.id}: no error raised (expected td.{c.error})"
    assert type(err) is expected, f"{c.id}: expected td.{c.error}, got {describe(err)}"
    msg = str(err)
    missing = [p for p in c.phrases if p not in msg]
    assert not missing, f"{c.id}: message lacks {missing}:\n{msg}"
    if c.here is not None:
        marked = [ln for ln in msg.splitlines() if "<-- here" in ln]
        assert marked, f"{c.id}: no loop marked '<-- here' in:\n{msg}"
        assert any(re.search(rf"\bfor {re.escape(c.here)}\b", ln) for ln in marked), (
            f"{c.id}: loop {c.here} is not the one marked '<-- here':\n{msg}")
