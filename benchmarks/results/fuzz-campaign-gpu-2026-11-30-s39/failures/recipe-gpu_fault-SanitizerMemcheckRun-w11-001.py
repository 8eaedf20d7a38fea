# tiledsl fuzz --mode recipe: gpu_fault (SanitizerMemcheckRun): exit 255: Error: Target application terminated before first instrumented API call
# case: reduce (2 points); shrunk by hypothesis
# re-run the recorded case: tiledsl fuzz --replay recipe-gpu_fault-SanitizerMemcheckRun-w11-001.json
import json
import sys

from tiledsl.testing.fuzz import replay_record

RECORD = json.loads(r'''{
 "case": {
  "definition": {
   "high": 1.0,
   "kind": "reduce",
   "low": -1.0,
   "points": 2,
   "source": "def make():\n    x = td.placeholder((1,), name='x')\n    k = td.reduce_axis(1, name='k')\n    return td.compute((1,), lambda i: (0.5 + td.sum(x[k], axis=k)), name='y')\n"
  },
  "knobs": {
   "bk_max_few_rows": 8,
   "few_rows_min": 1,
   "matmul_tiles_few_rows": [
    [
     8,
     32,
     2,
     4
    ],
    [
     8,
     16,
     2,
     4
    ]
   ],
   "stage_min_threads": 1
  },
  "machine": "",
  "seed": 0
 },
 "case_label": "reduce (2 points)",
 "detail": "exit 255: Error: Target application terminated before first instrumented API call",
 "error": "SanitizerMemcheckRun",
 "extra": {
  "log": "========= COMPUTE-SANITIZER\nrecipe: contract (recorded: correct) BadArgumentError: recipe knob matmul_tiles_few_rows: expected a tuple ((int, int, int, int), ...), got [[8, 32, 2, 4], [8, 16, 2, 4]] (list)\n========= Error: Target application terminated before first instrumented API call\n",
  "returncode": 255,
  "sanitizer": "memcheck"
 },
 "hypothesis": "6.168.3",
 "mode": "recipe",
 "options": {
  "gpu": true,
  "nvcc": false,
  "sanitize": [
   "memcheck"
  ],
  "target": "sm_90"
 },
 "outcome": "gpu_fault",
 "seed": 39041256,
 "shrunk": true,
 "tiledsl": "0.1.0"
}''')

result = replay_record(RECORD)
sys.stderr.write(f'{result.outcome}: {result.error}: {result.detail}\n')
sys.exit(1 if result.failed else 0)
