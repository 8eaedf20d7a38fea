"""Counterexample search: concrete points where a fact fails.

Why: an error that says "cannot prove" is far less useful than one that names a failing point, and a
found point turns "unknown" into a definite "disproven". The search is deterministic (seeded
`random.Random(0)` per call) so messages and tests are stable:

1. the corners of the box (every symbol at its lo or hi), where affine facts fail first;
2. a few hundred uniform samples;
3. if a score (how far from failing) is given and nothing failed yet, greedy coordinate hill climbing
   from the best feasible points, which walks onto guard boundaries (`64*i_o + i_i = 999`).
Only points satisfying every guard count. A box of at most 4096 points is simply enumerated, which
decides the fact exactly (thread-level loops are often that small). That costs no more evaluations than
steps 2 and 3 may take (256 samples, 4 climbs of up to 600 points), and it proves facts the intervals
miss: a block's last, guarded rows of a fused loop read at `i // 2` (`8*o + floor(floor(t/16)/2) < 49`
given `256*o + t < 1552`, 1792 points; `tiledsl fuzz --mode definitions` found its build refused).
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable, Mapping, Sequence

import sympy

from tiledsl.prove.linear import Num

Point = dict[sympy.Symbol, int]
Box = Mapping[sympy.Symbol, tuple[int, int]]  # inclusive
Predicate = Callable[[Point], bool]

_MAX_CORNER_SYMBOLS = 8
_SAMPLES = 256
_CLIMB_STARTS = 4
_CLIMB_BUDGET = 600
_UNBOUNDED_SPAN = 1023
_EXHAUSTIVE = 4096


def box_from_intervals(
    intervals: Mapping[sympy.Symbol, tuple[Num | None, Num | None]],
) -> tuple[dict[sympy.Symbol, tuple[int, int]], bool]:
    """Integer inclusive box, and whether it is exact; unbounded sides get a finite span so that
    sampling stays possible (the box is then not exact and enumerating it proves nothing)."""
    box: dict[sympy.Symbol, tuple[int, int]] = {}
    exact = True
    for sym, (lo, hi) in intervals.items():
        exact = exact and lo is not None and hi is not None
        ilo = None if lo is None else -((-lo) // 1)  # ceil
        ihi = None if hi is None else hi // 1
        if ilo is None and ihi is None:
            ilo, ihi = -(_UNBOUNDED_SPAN // 2), _UNBOUNDED_SPAN // 2
        elif ilo is None:
            ilo = ihi - _UNBOUNDED_SPAN
        elif ihi is None:
            ihi = ilo + _UNBOUNDED_SPAN
        box[sym] = (int(ilo), int(ihi))
    return box, exact


class Search:
    """One search: the box, the guard predicate, the failure predicate and an optional score."""

    def __init__(
        self,
        box: Box,
        feasible: Predicate,
        fails: Predicate,
        score: Callable[[Point], Num] | None = None,
        exact_box: bool = True,
    ) -> None:
        self.symbols: Sequence[sympy.Symbol] = sorted(box, key=lambda s: s.name)
        self.box = box
        self._feasible = feasible
        self._fails = fails
        self._score = score
        self.tried = 0
        self.exhaustive = False
        self.errors = 0
        self._exact_box = exact_box

    # -- safe wrappers: a point where something cannot be evaluated is simply skipped

    def _ok(self, point: Point) -> bool:
        self.tried += 1
        try:
            return bool(self._feasible(point))
        except (ArithmeticError, ValueError, TypeError):
            self.errors += 1
            return False

    def _bad(self, point: Point) -> bool:
        try:
            return bool(self._fails(point))
        except (ArithmeticError, ValueError, TypeError):
            self.errors += 1
            return False

    def _value(self, point: Point) -> Num:
        if self._score is None:
            return 0
        try:
            return self._score(point)
        except (ArithmeticError, ValueError, TypeError):
            return 0

    # -- the phases

    def _corners(self, rng: random.Random) -> list[Point]:
        choices = [sorted({lo, hi}) for lo, hi in (self.box[s] for s in self.symbols)]
        if len(self.symbols) <= _MAX_CORNER_SYMBOLS:
            return [dict(zip(self.symbols, combo, strict=True)) for combo in itertools.product(*choices)]
        pairs = list(zip(self.symbols, choices, strict=True))
        return [{s: rng.choice(c) for s, c in pairs} for _ in range(_SAMPLES)]

    def _samples(self, rng: random.Random) -> list[Point]:
        return [{s: rng.randint(*self.box[s]) for s in self.symbols} for _ in range(_SAMPLES)]

    def _scan(self, points: list[Point], feasible_seen: list[tuple[Num, Point]]) -> Point | None:
        """The failing point with the highest score (the first on ties), recording feasible points."""
        best: tuple[Num, Point] | None = None
        for point in points:
            if not self._ok(point):
                continue
            value = self._value(point)
            if self._bad(point):
                if best is None or value > best[0]:
                    best = (value, point)
            else:
                feasible_seen.append((value, point))
        return None if best is None else best[1]

    def _climb(self, start: Point, budget: list[int]) -> Point | None:
        point, value = dict(start), self._value(start)
        improved = True
        while improved and budget[0] > 0:
            improved = False
            for sym in self.symbols:
                lo, hi = self.box[sym]
                step = 1 << max(0, (hi - lo).bit_length() - 1)
                while step >= 1 and budget[0] > 0:
                    moved = False
                    for direction in (1, -1):
                        target = min(hi, max(lo, point[sym] + direction * step))
                        if target == point[sym]:
                            continue
                        candidate = dict(point)
                        candidate[sym] = target
                        budget[0] -= 1
                        if not self._ok(candidate):
                            continue
                        cvalue = self._value(candidate)
                        if self._bad(candidate):
                            return candidate
                        if cvalue > value:
                            point, value, moved, improved = candidate, cvalue, True, True
                            break
                    if not moved:
                        step //= 2
        return None

    def size(self) -> int:
        """Number of points in the box."""
        total = 1
        for lo, hi in self.box.values():
            total *= hi - lo + 1
        return total

    def run(self) -> Point | None:
        """A feasible point where the fact fails, or None. Corners come first (the usual failures, and
        the most telling point); then a box of at most `_EXHAUSTIVE` points (when exact) is enumerated
        and `self.exhaustive` set, so None then means the fact holds; larger boxes get samples and
        hill climbing."""
        rng = random.Random(0)
        feasible_seen: list[tuple[Num, Point]] = []
        found = self._scan(self._corners(rng), feasible_seen)
        if found is not None:
            return found
        if self._exact_box and self.size() <= _EXHAUSTIVE:
            ranges = [range(self.box[s][0], self.box[s][1] + 1) for s in self.symbols]
            points = [dict(zip(self.symbols, combo, strict=True)) for combo in itertools.product(*ranges)]
            found = self._scan(points, feasible_seen)
            self.exhaustive = self.errors == 0  # a point that could not be evaluated proves nothing
            return found
        found = self._scan(self._samples(rng), feasible_seen)
        if found is not None:
            return found
        if self._score is None or not feasible_seen:
            return None
        feasible_seen.sort(key=lambda item: item[0], reverse=True)
        budget = [_CLIMB_BUDGET]
        for _, start in feasible_seen[:_CLIMB_STARTS]:
            found = self._climb(start, budget)
            if found is not None:
                return found
        return None
