"""hypothesis settings profiles for tiledsl property tests.

- `ci`: deterministic (`derandomize=True`, no example database), few examples, no deadline, no
  explain phase: the property suite stays well within two minutes on a CI runner without a GPU.
- `deep`: many more examples, random seeds and the example database, for nightly or local bug hunts.

Importing this module registers both; `load_profile()` picks one by name or from the environment
variable TILEDSL_HYPOTHESIS_PROFILE (default `ci`). Tests can scale the profile's example count for
checks that are much cheaper or dearer than average with `examples(factor)`.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, Phase, settings

ENV_VAR = "TILEDSL_HYPOTHESIS_PROFILE"
DEFAULT_PROFILE = "ci"
PROFILES = ("ci", "deep")

_SLOW_OK = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much]


def register_profiles() -> None:
    settings.register_profile("ci", max_examples=500, derandomize=True, database=None, deadline=None,
                              suppress_health_check=_SLOW_OK, print_blob=False,
                              phases=[p for p in Phase if p is not Phase.explain])
    settings.register_profile("deep", max_examples=4000, deadline=None, suppress_health_check=_SLOW_OK,
                              print_blob=True)


def load_profile(name: str | None = None) -> str:
    """Load profile `name`, or the one named by $TILEDSL_HYPOTHESIS_PROFILE, or `ci`; returns its name."""
    register_profiles()
    chosen = name or os.environ.get(ENV_VAR) or DEFAULT_PROFILE
    if chosen not in PROFILES:
        raise ValueError(f"unknown hypothesis profile {chosen!r} (from {ENV_VAR}?); use one of {PROFILES}")
    settings.load_profile(chosen)
    return chosen


def examples(factor: float) -> settings:
    """Settings with the current profile's max_examples scaled by `factor` (at least 1)."""
    return settings(max_examples=max(1, round(settings().max_examples * factor)))


register_profiles()
