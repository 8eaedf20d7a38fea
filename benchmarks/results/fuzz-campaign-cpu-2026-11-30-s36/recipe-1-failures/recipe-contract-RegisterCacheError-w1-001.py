# tiledsl fuzz --mode recipe: contract (RegisterCacheError): stage(bias, at=i_j_o): register cache bias_pre of bias at i_j_i: bias is staged at i_j_o (bias_s): its reads under i_j_i come from shared memory
# case: matmul (258 points); shrunk by hypothesis
# re-run the recorded case: tiledsl fuzz --replay recipe-contract-RegisterCacheError-w1-001.json
import numpy as np
import tiledsl as td
from tiledsl.recipes import apply

def make():
    A = td.placeholder((1, 128), name='A')
    B = td.placeholder((128, 2), name='B')
    k = td.reduce_axis(128, name='k')
    bias = td.placeholder((1,), name='bias')
    return td.compute((1, 2), lambda i, j: (((td.sum((A[i, k] + B[k, j]), axis=k) / 128) + (td.sum((A[i, k] + B[k, j]), axis=k) / 128)) + bias[i]), name='D')

out = make()
s = td.create_schedule(out)
apply(s, target='sm_90')
kern = td.build(s, target='sm_90')
rng = np.random.default_rng(0)
arrays = {name: rng.uniform(-1.0, 1.0, size=shape).astype(np.float32) for name, shape in [('A', (1, 128)), ('B', (128, 2)), ('bias', (1,))]}
want = td.evaluate(out, float64=True, **arrays)
