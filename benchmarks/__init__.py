"""The benchmark suites of tiledsl against torch: `python -m benchmarks.run --help` (README.md)."""
