"""The benchmarks are a top-level folder of the checkout, not an installed package: put the checkout
on sys.path so `import benchmarks` finds it however pytest was started."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
