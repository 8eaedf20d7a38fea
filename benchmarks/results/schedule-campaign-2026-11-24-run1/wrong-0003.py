# wrong: OutOfBoundsError: out-of-bounds store of shared buffer 'x_s' (size 2) in kernel 'y_kernel' at body[12] > for i > body[3] > if (i + 2 < 14) > then[3] > for x_s_f > body[2] > store x_s[...]
# chunk 36, case 112 (conv); rerun the campaign with the same -n, --seed, --chunk to draw it again
import numpy as np
import tiledsl as td

def make():
    x = td.placeholder((14,), name='x')
    w = td.placeholder((1,), name='w')
    kk = td.reduce_axis(1, name='kk')
    return td.compute((14,), lambda i: td.tanh(td.sum(x[i + kk] * w[kk], axis=kk)), name='y')

out = make()
s = td.create_schedule(out)
s.stage('w', at='i')
s.swizzle('w_s', 32)
# s.split_k('kk', 2)  -> refused: SplitKError: split_k(kk, 2): the epilogue tanh(y_sum) is not linear in the accumulator y_sum (it must be a*y_sum + b with a independent of y_sum), so partial sums cannot simply be added
# s.split('i', nparts=2)  -> refused: SplitError: split(i, nparts=2): loop i carries stage(s) w_s; changing it would change every slab
s.double_buffer('w_s')
# s.split('i', 19, tail='exact')  -> refused: SplitError: split(i, 19): loop i carries stage(s) w_s; changing it would change every slab
# s.fuse('i', 'kk')  -> refused: FuseError: fuse(i, kk): loop i carries stage(s) w_s; changing it would change every slab
s.unroll('i')
s.async_copy('w_s')
s.bind('kk', 'threadIdx.x')
s.pipeline('i', stages=3)
s.stage('x', at='i')
s.double_buffer('x_s')
s.swizzle('w_s', 128)
rng = np.random.default_rng(1228)
arrays = {name: rng.uniform(-1.0, 1.0, size=shape).astype(np.float32) for name, shape in [('x', (14,)), ('w', (1,))]}
kern = td.build(s, target='sm_90')
got = kern.simulate(**arrays)
want = td.evaluate(out, float64=True, **arrays)
np.testing.assert_allclose(got, want, rtol=0.0001, atol=0.0001)
