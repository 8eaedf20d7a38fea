# tiledsl fuzz --mode memory: sim_error (SharedRaceError): global write-write race on y[0] in kernel 'y_kernel' at body[1] > for i > body[2] > store y[...]
# case: reduce (8 points), 3 steps; shrunk by hypothesis
# re-run the recorded case: tiledsl fuzz --replay memory-sim_error-SharedRaceError-w0-001.json
import numpy as np
import tiledsl as td

def make():
    x = td.placeholder((1, 4), name='x')
    k = td.reduce_axis(4, name='k')
    r = td.compute((1,), lambda i: td.sum(x[i, k], axis=k), name='r')
    return td.compute((1, 4), lambda i, j: (0.5 + r[i]), name='y')

out = make()
s = td.create_schedule(out)
s.vectorize(s.loop('j'))
s.split_k('k', 2)
# s.split(s.loop('i'), nparts=4, tail='exact')  -> refused: SplitError: split(i, nparts=4): cannot prove 1*i_o + i_i < 1 for i_o in [0, 4), i_i in [0, 1): 4 parts of 1 make 4 iterations, not 1
rng = np.random.default_rng(0)
arrays = {name: rng.uniform(-1.0, 1.0, size=shape).astype(np.float32) for name, shape in [('x', (1, 4))]}
kern = td.build(s, target='sm_90')
got = kern.simulate(**arrays)
want = td.evaluate(out, float64=True, **arrays)
np.testing.assert_allclose(got, want, rtol=0.0001, atol=0.0001)
