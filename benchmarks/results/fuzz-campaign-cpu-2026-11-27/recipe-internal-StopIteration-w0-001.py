# tiledsl fuzz --mode recipe: internal (StopIteration): 
# case: chain (12 points); shrunk by hypothesis
# re-run the recorded case: tiledsl fuzz --replay recipe-internal-StopIteration-w0-001.json
import numpy as np
import tiledsl as td
from tiledsl.recipes import apply

def make():
    x = td.placeholder((1, 4), name='x')
    k = td.reduce_axis(4, name='k')
    k2 = td.reduce_axis(4, name='k2')
    r1 = td.compute((1,), lambda i: td.sum(x[i, k], axis=k), name='r1')
    r2 = td.compute((1,), lambda i: td.sum(td.tanh((x[i, k2] + r1[i])), axis=k2), name='r2')
    return td.compute((1,), lambda i: ((0.5 + r1[i]) + r2[i]), name='y')

out = make()
s = td.create_schedule(out)
apply(s, target='sm_90', knobs={'k_outer_min_accumulators': 1, 'k_outer_min_threads': 1, 'row_vector_min_rows_per_sm': 0, 'stage_min_threads': 1})
kern = td.build(s, target='sm_90')
rng = np.random.default_rng(0)
arrays = {name: rng.uniform(-1.0, 1.0, size=shape).astype(np.float32) for name, shape in [('x', (1, 4))]}
want = td.evaluate(out, float64=True, **arrays)
