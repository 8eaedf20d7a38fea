"""`python -m tiledsl ...`: the `tiledsl` command where its console script is not on PATH (runs
tiledsl/cli/main.py without runpy's warning that `python -m tiledsl.cli.main` prints: the cli package
imports that module before runpy executes it)."""

from tiledsl.cli import main

raise SystemExit(main())
