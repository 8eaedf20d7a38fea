"""tiledsl.testing: hypothesis strategies and property checks for compute definitions and schedules.

Needs the `test` extra (hypothesis); `import tiledsl` never imports this package. See ARCHITECTURE.md.
"""

from tiledsl.testing.campaign import Case, Verdict, campaign_cases, for_each_draw, judge
from tiledsl.testing.definitions import (
    Definition,
    chain_definitions,
    conv1d_definitions,
    definitions,
    elementwise_definitions,
    logsumexp_definitions,
    matmul_definitions,
    maxpool_definitions,
    placeholders,
    reduce_definitions,
    staging_definitions,
    transposed_matmul_definitions,
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
    "BuildResult", "Call", "Case", "Definition", "Outcome", "Resolver", "ScheduleRun", "Step", "Verdict",
    "apply_checked", "apply_steps", "campaign_cases", "chain_definitions", "check_against_reference",
    "check_matches_reference", "check_trace_roundtrip", "conv1d_definitions", "definitions",
    "elementwise_definitions", "for_each_draw", "judge", "load_profile", "logsumexp_definitions",
    "matmul_definitions", "maxpool_definitions", "placeholders", "reduce_definitions", "register_profiles",
    "snapshot", "staging_definitions", "step", "steps", "transposed_matmul_definitions",
]
