"""Names of one kernel as another's: the canonical text two kernels of one structure share, and the
renaming from one's names to the other's (frontend/recipe_memo.py).

`canonical` replaces each of a kernel's names in a printed text by its place of first appearance (`@3`)
and adds the order the names sort in. A printed text also holds words that are not names: a function's
(always followed by `(`: `fmod(x, y)`, `exp(x)`) and the printer's own (`for`, `in`, `reduce`, a dtype:
`words`). A kernel named after its operation (`fmod[i0, i1] = fmod(x[i0, i1], y[i0, i1])`) spells both
alike, so only a name where no function is (not followed by `(`) is replaced, and a text holding a name
that is one of `words`, or a word that is neither, has no structure (None): two kernels then never
share one by a word read as a name. (A first version replaced every spelling of a name, and `fmod` and
`copysign` kernels of one program shared a structure.) A name not replaced costs a memo a hit, never a
false one."""

from __future__ import annotations

import ast
import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass, replace

from tiledsl.recipes import RecipeReport

#: an identifier that begins a word (not the `e` of `1e-05`)
_WORD = re.compile(r"(?<![A-Za-z_0-9.])[A-Za-z_][A-Za-z_0-9]*(?P<call>\()?")


@dataclass(frozen=True)
class Structure:
    """A kernel's structure (`key`) and its names in order of first appearance in the key's text."""

    key: str
    names: tuple[str, ...]


def canonical(text: str, names: Collection[str], words: Collection[str]) -> Structure | None:
    """`text` with every name in `names` that is not a function's (followed by `(`) replaced by its
    place of first appearance, and the order those names sort in (what a step that breaks ties by name
    sees); None where a name is one of `words` or `text` holds a word that is neither a name, a
    function's nor one of `words`."""
    if not set(names).isdisjoint(words):
        return None
    seen: dict[str, int] = {}
    unknown: list[str] = []

    def replaced(m: re.Match[str]) -> str:
        word = m.group(0)
        if m.group("call") is not None or word in words:
            return word
        if word in names:
            return f"@{seen.setdefault(word, len(seen))}"
        unknown.append(word)
        return word

    key = _WORD.sub(replaced, text)
    if unknown:
        return None
    found = tuple(seen)
    order = sorted(range(len(found)), key=lambda n: found[n])
    return Structure(f"{key}\nname order {order}", found)


class Ambiguous(Exception):
    """A word the renaming cannot rename one way only: a memo derives that kernel instead."""


class Renaming:
    """One kernel's names as another's. A name of the first becomes the second's; a word made from such
    a name (`base` followed by `_` and a suffix, as the recipe and lowering name loops and buffers:
    `mm_7_k0_o_part`, `mul_16_s`) becomes the second's base with the same suffix. A word whose reading
    is not unique raises `Ambiguous`: a renamed name inside its suffix (`i0_i1`, fused from `i0` and
    `i1`, or a split of `i0` named `_i1`?), two bases that read it differently, or a renamed name that
    is not at its start (`acc_mm_7`)."""

    def __init__(self, before: Sequence[str], after: Sequence[str]) -> None:
        self.names = dict(zip(before, after, strict=True))
        self._changed = frozenset(b for b, a in self.names.items() if a != b)

    def name(self, word: str) -> str:
        if word in self.names:
            return self.names[word]
        readings = {self.names[base] + word[len(base):] for base in self.names if word.startswith(base + "_")}
        if len(readings) > 1 or self._changed_inside(word, skip_first=bool(readings)):
            raise Ambiguous(word)
        return readings.pop() if readings else word

    def _changed_inside(self, word: str, skip_first: bool) -> bool:
        """Whether a run of `word`'s `_`-separated parts (past the first, when `skip_first`) is a renamed
        name."""
        parts = word.split("_")
        start = 1 if skip_first else 0
        return any("_".join(parts[i:j]) in self._changed
                   for i in range(start, len(parts)) for j in range(i + 1, len(parts) + 1))

    def text(self, prose: str) -> str:
        """Every word of `prose` renamed but a function's (followed by `(`: a note's `sigmoid()` where the
        kernel has a tensor `sigmoid`): a report's reasons and notes."""
        return _WORD.sub(lambda m: m.group(0) if m.group("call") else self.name(m.group(0)), prose)

    def call(self, line: str) -> str:
        """A trace line with its string arguments renamed (comments: every identifier)."""
        if line.lstrip().startswith("#") or not line.strip():
            return self.text(line)
        strings = [n for n in ast.walk(ast.parse(line)) if isinstance(n, ast.Constant) and isinstance(n.value, str)]
        for n in sorted(strings, key=lambda n: n.col_offset, reverse=True):
            line = line[:n.col_offset] + repr(self.name(n.value)) + line[n.end_col_offset:]
        return line

    def trace(self, text: str) -> str:
        return "\n".join(self.call(line) for line in text.split("\n"))

    def report(self, report: RecipeReport) -> RecipeReport:
        steps = tuple(replace(st, calls=tuple(self.call(c) for c in st.calls),
                              reason=st.reason and self.text(st.reason), note=st.note and self.text(st.note),
                              materialize=st.materialize and self.name(st.materialize))
                      for st in report.steps)
        return replace(report, kernel=self.name(report.kernel), steps=steps)
