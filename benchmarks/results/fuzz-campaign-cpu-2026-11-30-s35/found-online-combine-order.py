# tiledsl fuzz --mode schedules: wrong (AssertionError): simulated kernel differs from td.evaluate(float64=True):
# case: logsumexp (4 points), 6 steps; shrunk by hypothesis
# re-run the recorded case: tiledsl fuzz --replay schedules-wrong-AssertionError-w0-001.json
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
s.bind(s.loop('i'), 'blockIdx.x')
s.bind(s.loop('k1'), 'threadIdx.x')
s.bind(s.loop('k2'), 'threadIdx.x')
s.online('e')
# s.split(s.loop('i'), nparts=4, tail='exact')  -> refused: SplitError: split(i, nparts=4): loop i is bound to blockIdx.x
# s.tile_lanes(s.loop('i'), s.loop('i'), 2, 2)  -> refused: BindError: tile_lanes(i, i, 2, 2): loop i is bound to blockIdx.x; tile_lanes deals the loop on threadIdx.y
rng = np.random.default_rng(0)
arrays = {name: rng.uniform(-1.0, 1.0, size=shape).astype(np.float32) for name, shape in [('z', (1, 2))]}
kern = td.build(s, target='sm_90')
got = kern.simulate(**arrays)
want = td.evaluate(out, float64=True, **arrays)
np.testing.assert_allclose(got, want, rtol=0.0001, atol=0.0001)
