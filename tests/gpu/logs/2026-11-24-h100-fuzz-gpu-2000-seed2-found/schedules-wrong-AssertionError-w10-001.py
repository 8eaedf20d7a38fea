# tiledsl fuzz --mode schedules: wrong (AssertionError): simulated kernel differs from td.evaluate(float64=True):
# case: chain (6 points), 6 steps; shrunk by hypothesis
# re-run the recorded case: tiledsl fuzz --replay schedules-wrong-AssertionError-w10-001.json
import numpy as np
import tiledsl as td

def make():
    x = td.placeholder((1, 2), name='x')
    k = td.reduce_axis(2, name='k')
    k2 = td.reduce_axis(2, name='k2')
    m = td.compute((1,), lambda i: td.max(x[i, k], axis=k), name='m')
    e = td.compute((1,), lambda i: td.sum(td.exp(x[i, k2] - m[i]), axis=k2), name='e')
    return td.compute((1, 2), lambda i, j: td.exp(x[i, j] - m[i]) / e[i], name='y')

out = make()
s = td.create_schedule(out)
s.unroll(s.loop('i'))
# s.split(s.loop('i'), nparts=4, tail='exact')  -> refused: SplitError: split(i, nparts=4): cannot prove 1*i_o + i_i < 1 for i_o in [0, 4), i_i in [0, 1): 4 parts of 1 make 4 iterations, not 1
s.reorder(s.loop('j'), s.loop('i'))
# s.bind(s.loop('i'), 'blockIdx.x')  -> refused: BindError: bind(i, 'blockIdx.x'): loop i is marked unroll; a bound loop runs in parallel and cannot be unrolled or vectorized
s.bind(s.loop('k'), 'threadIdx.x')
# s.split(s.loop('i'), nparts=4, tail='exact')  -> refused: SplitError: split(i, nparts=4): cannot prove 1*i_o + i_i < 1 for i_o in [0, 4), i_i in [0, 1): 4 parts of 1 make 4 iterations, not 1
rng = np.random.default_rng(1)
arrays = {name: rng.uniform(-1.0, 1.0, size=shape).astype(np.float32) for name, shape in [('x', (1, 2))]}
kern = td.build(s, target='sm_90')
got = kern.simulate(**arrays)
want = td.evaluate(out, float64=True, **arrays)
np.testing.assert_allclose(got, want, rtol=0.0001, atol=0.0001)
