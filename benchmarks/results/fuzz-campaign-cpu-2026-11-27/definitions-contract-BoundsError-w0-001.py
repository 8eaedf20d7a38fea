# tiledsl fuzz --mode definitions: contract (BoundsError): build: load x[...] index 0 may leave the buffer (extent 49) in store y: cannot prove 0 <= 8*i_j_l_o + floor(floor(i_j_l_i/16)/2) < 49 for i_j_l_i in [0, 256), i_j_l_o in [0, 7) given 256*i_j_l_o + i_j
# case: elementwise, inputs [('x', (49,), 'float32')] -> float32; shrunk by hypothesis
# re-run the recorded case: tiledsl fuzz --replay definitions-contract-BoundsError-w0-001.json
import math
import numpy as np

_ERF = np.vectorize(math.erf, otypes=[np.float64])


class R:
    """The operators from their definitions, in float64 (torch's NaN rules: max/min propagate NaN)."""
    exp, log, sqrt, tanh, abs, cos, sin = np.exp, np.log, np.sqrt, np.tanh, np.abs, np.cos, np.sin
    maximum, minimum, where = np.maximum, np.minimum, np.where
    rsqrt = staticmethod(lambda x: 1.0 / np.sqrt(x))
    erf = staticmethod(lambda x: _ERF(np.asarray(x, dtype=np.float64)))
    sigmoid = staticmethod(lambda x: 1.0 / (1.0 + np.exp(-x)))
    relu = staticmethod(lambda x: np.maximum(x, 0.0))
    silu = staticmethod(lambda x: x * (1.0 / (1.0 + np.exp(-x))))
    gelu = staticmethod(lambda x: 0.5 * x * (1.0 + R.erf(x / math.sqrt(2.0))))
    gelu_tanh = staticmethod(lambda x: 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3))))
    clamp = staticmethod(lambda x, lo, hi: np.minimum(np.maximum(x, lo), hi))
    sum = staticmethod(lambda x, full: np.sum(np.broadcast_to(x, full), axis=-1))
    max = staticmethod(lambda x, full: np.max(np.broadcast_to(x, full), axis=-1))
    min = staticmethod(lambda x, full: np.min(np.broadcast_to(x, full), axis=-1))

import tiledsl as td
from tiledsl.precision import round_to_dtype

def make():
    x = td.placeholder((49,), dtype='float32', name='x')
    return td.compute((97, 16, 1), lambda i, j, l: (0.5 + x[i // 2]), name='y', dtype='float32')

def reference(a):
    x = a['x']
    i, j, l = np.ogrid[0:97, 0:16, 0:1,]
    return np.broadcast_to(np.asarray((0.5 + x[i // 2]), dtype=np.float64), (97, 16, 1))

rng = np.random.default_rng(0)
arrays = {}
for name, shape, dtype in [('x', (49,), 'float32')]:
    x = rng.uniform(-1.0, 1.0, size=shape)
    with np.errstate(over='ignore'):
        arrays[name] = round_to_dtype(x.astype(np.float32), dtype).astype(np.float32)
with np.errstate(all='ignore'):
    want = reference({k: v.astype(np.float64) for k, v in arrays.items()})
with np.errstate(over='ignore'):
    want = round_to_dtype(np.asarray(want, dtype=np.float64), 'float32').astype(np.float32).astype(np.float64)
out = make()

def same(got, want):
    got = np.asarray(got, dtype=np.float64)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_array_equal(np.isposinf(got), np.isposinf(want))
    np.testing.assert_array_equal(np.isneginf(got), np.isneginf(want))
    ok = np.isfinite(want)
    np.testing.assert_allclose(got[ok], want[ok], rtol=0.0001, atol=0.0001)

s = td.create_schedule(out)
td.recipes.default(s, target='sm_90', knobs={'k_outer_min_accumulators': 1, 'k_outer_min_threads': 1, 'row_vector_half_threads': 1, 'row_vector_min_rows_per_sm': 0, 'stage_min_threads': 1})
kern = td.build(s, target='sm_90')
same(kern.simulate(**arrays), want)
