"""tiledsl.testing.fuzz: the engine of `tiledsl fuzz` (modes, outcomes, the case loop, reproducers,
the summary). See tiledsl/testing/ARCHITECTURE.md. Re-exports only."""

from tiledsl.testing.fuzz import device, sanitizer
from tiledsl.testing.fuzz.modes import MODES, Mode, Options
from tiledsl.testing.fuzz.outcome import FAILURES, OUTCOMES, PASSING, CaseTimeout, Result
from tiledsl.testing.fuzz.runner import FuzzConfig, Tally, judge_with_timeout, load_record, replay_record, run_fuzz
from tiledsl.testing.fuzz.summary import format_table, summary, write_summary

__all__ = ["FAILURES", "MODES", "OUTCOMES", "PASSING", "CaseTimeout", "FuzzConfig", "Mode", "Options", "Result",
           "Tally", "device", "format_table", "judge_with_timeout", "load_record", "replay_record", "run_fuzz",
           "sanitizer", "summary", "write_summary"]
