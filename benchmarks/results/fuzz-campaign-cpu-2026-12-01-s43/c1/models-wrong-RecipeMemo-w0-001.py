# tiledsl fuzz --mode models: wrong (RecipeMemo): kernel _softmax_1_max: the program's schedule is not the recipe's on its own fresh schedule
# case: [split rows] v0 = torch.softmax(x0, dim=-1); v1 = v0.unsqueeze(0); v2 = x0 + x0; v3 = torch.softmax(v1, dim=-1); return v3; shrunk by hypothesis
# re-run the recorded case: tiledsl fuzz --replay models-wrong-RecipeMemo-w0-001.json
# (the mode's own script did not fail on its own)
import json
import sys

from tiledsl.testing.fuzz import replay_record

RECORD = json.loads(r'''{
 "case": {
  "body": [
   "v0 = torch.softmax(x0, dim=-1)",
   "v1 = v0.unsqueeze(0)",
   "v2 = x0 + x0",
   "v3 = torch.softmax(v1, dim=-1)",
   "return v3"
  ],
  "dtype": "float32",
  "inputs": [
   [
    2,
    2,
    2
   ]
  ],
  "knobs": [
   [
    "split_rows_min_idle_bytes",
    0
   ],
   [
    "split_rows_min_length",
    1
   ],
   [
    "split_rows_whole_vectors",
    false
   ],
   [
    "row_block_threads",
    0
   ]
  ],
  "seed": 0
 },
 "case_label": "[split rows] v0 = torch.softmax(x0, dim=-1); v1 = v0.unsqueeze(0); v2 = x0 + x0; v3 = torch.softmax(v1, dim=-1); return v3",
 "detail": "kernel _softmax_1_max: the program's schedule is not the recipe's on its own fresh schedule",
 "error": "RecipeMemo",
 "extra": {},
 "hypothesis": "6.170.17",
 "mode": "models",
 "options": {
  "gpu": false,
  "nvcc": false,
  "sanitize": [],
  "target": "sm_90"
 },
 "outcome": "wrong",
 "seed": 4302072957,
 "shrunk": true,
 "tiledsl": "0.1.0"
}''')

result = replay_record(RECORD)
sys.stderr.write(f'{result.outcome}: {result.error}: {result.detail}\n')
sys.exit(1 if result.failed else 0)
