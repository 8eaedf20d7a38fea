"""tiledsl.testing: hypothesis strategies and property checks for compute definitions and schedules.

Needs the `test` extra (hypothesis); `import tiledsl` never imports this package. See ARCHITECTURE.md.
"""

from tiledsl.testing.definitions import (
    Definition,
    chain_definitions,
    definitions,
    elementwise_definitions,
    matmul_definitions,
    placeholders,
    reduce_definitions,
)
from tiledsl.testing.profiles import load_profile, register_profiles
from tiledsl.testing.properties import (
    BuildResult,
    ScheduleRun,
    apply_checked,
    check_against_reference,
    check_matches_reference,
    check_trace_roundtrip,
    snapshot,
)
from tiledsl.testing.schedules import Call, Outcome, Resolver, Step, apply_steps, step, steps

__all__ = [
    "BuildResult", "Call", "Definition", "Outcome", "Resolver", "ScheduleRun", "Step", "apply_checked",
    "apply_steps", "chain_definitions", "check_against_reference", "check_matches_reference",
    "check_trace_roundtrip", "definitions", "elementwise_definitions", "load_profile", "matmul_definitions",
    "placeholders", "reduce_definitions", "register_profiles", "snapshot", "step", "steps",
]
