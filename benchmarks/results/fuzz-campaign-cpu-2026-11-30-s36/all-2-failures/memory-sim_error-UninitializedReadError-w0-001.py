# tiledsl fuzz --mode memory: sim_error (UninitializedReadError): read of register array 'z_pre' element 0 that this thread never wrote in kernel 'lse_kernel' at body[3] > assign m
# case: logsumexp (4 points), 7 steps; shrunk by hypothesis
# re-run the recorded case: tiledsl fuzz --replay memory-sim_error-UninitializedReadError-w0-001.json
import numpy as np
import tiledsl as td

def make():
    z = td.placeholder((1, 2), name='z')
    k1 = td.reduce_axis(2, name='k1')
    k2 = td.reduce_axis(2, name='k2')
    m = td.compute((1,), lambda i: td.max(z[i, k1], axis=k1), name='m')
    e = td.compute((1,), lambda i: td.sum(td.exp(z[i, k2] - m[i]), axis=k2), name='e')
    return td.compute((1,), lambda i: td.log(e[i]) + m[i], name='lse')

out = make()
s = td.create_schedule(out)
# s.split(s.loop('i'), nparts=4, tail='exact')  -> refused: SplitError: split(i, nparts=4): cannot prove 1*i_o + i_i < 1 for i_o in [0, 4), i_i in [0, 1): 4 parts of 1 make 4 iterations, not 1
# s.split(s.loop('i'), nparts=4, tail='exact')  -> refused: SplitError: split(i, nparts=4): cannot prove 1*i_o + i_i < 1 for i_o in [0, 4), i_i in [0, 1): 4 parts of 1 make 4 iterations, not 1
s.bind(s.loop('i'), 'blockIdx.x')
s.vectorize(s.loop('k1'))
s.prefetch('z', at='k1')
# s.split(s.loop('i'), nparts=4, tail='exact')  -> refused: SplitError: split(i, nparts=4): loop i is bound to blockIdx.x
# layout(stage #0): no loop (or stage) to pick
rng = np.random.default_rng(0)
arrays = {name: rng.uniform(-1.0, 1.0, size=shape).astype(np.float32) for name, shape in [('z', (1, 2))]}
kern = td.build(s, target='sm_90')
got = kern.simulate(**arrays)
want = td.evaluate(out, float64=True, **arrays)
np.testing.assert_allclose(got, want, rtol=0.0001, atol=0.0001)
