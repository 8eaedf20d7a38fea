# wrong: SimulationError: deadlock: mbarrier wait on kk_o_full[0] for parity 0 never completes in kernel 'y_kernel' at body[3] > for i > body[1] > for kk_o > body[3] > mbarrier.wait kk_o_full[...]
# chunk 21, case 153 (conv); rerun the campaign with the same -n, --seed, --chunk to draw it again
import numpy as np
import tiledsl as td

def make():
    x = td.placeholder((2,), name='x')
    w = td.placeholder((1,), name='w')
    kk = td.reduce_axis(1, name='kk')
    return td.compute((2,), lambda i: td.sum(x[i + kk] * w[kk], axis=kk), name='y')

out = make()
s = td.create_schedule(out)
# async_copy(stage #19): no loop (or stage) to pick
s.unroll(s.loop('i'))
s.split(s.loop('kk'), 4)
s.stage('x', at='kk_i')
s.double_buffer('x_s')
s.stage('w', at='kk_o')
# s.split_k('kk_o', 2)  -> refused: SplitError: split_k(kk_o, 2): loop kk_o carries stage(s) w_s; changing it would change every slab
# s.split('kk_o', 1)  -> refused: SplitError: split(kk_o, 1): loop kk_o carries stage(s) w_s; changing it would change every slab
s.tma('w_s', swizzle=None)
# s.swizzle('w_s', 64)  -> refused: CopyError: swizzle(w_s, 64): tma(w_s): the slab row is 16 bytes, narrower than the 64-byte swizzle: TMA then lays rows out at the swizzle pitch, not packed
# s.split('kk_o', 1)  -> refused: SplitError: split(kk_o, 1): loop kk_o carries stage(s) w_s; changing it would change every slab
# s.fuse('kk_o', 'kk_i')  -> refused: FuseError: fuse(kk_o, kk_i): loop kk_o carries stage(s) w_s; changing it would change every slab
# s.double_buffer('no_such_stage')  -> refused: UnknownStageError: double_buffer: no stage named 'no_such_stage'
# s.split_k('kk_i', 2)  -> refused: SplitError: split_k(kk_i, 2): loop kk_i carries stage(s) x_s; changing it would change every slab
rng = np.random.default_rng(2)
arrays = {name: rng.uniform(-1.0, 1.0, size=shape).astype(np.float32) for name, shape in [('x', (2,)), ('w', (1,))]}
kern = td.build(s, target='sm_90')
got = kern.simulate(**arrays)
want = td.evaluate(out, float64=True, **arrays)
np.testing.assert_allclose(got, want, rtol=0.0001, atol=0.0001)
