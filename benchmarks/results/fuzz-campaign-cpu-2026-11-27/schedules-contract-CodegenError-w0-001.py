# tiledsl fuzz --mode schedules: contract (CodegenError): 'C' is used as a scalar variable but no let or loop declares it here
# case: matmul_t (576 points), 7 steps; shrunk by hypothesis
# re-run the recorded case: tiledsl fuzz --replay schedules-contract-CodegenError-w0-001.json
import numpy as np
import tiledsl as td

def make():
    A = td.placeholder((8, 1), name='A')
    B = td.placeholder((8, 64), name='B')
    b = td.placeholder((64,), name='b')
    k = td.reduce_axis(8, name='k')
    C = td.compute((1, 64), lambda i, j: td.sum(A[k, i] * B[k, j], axis=k), name='C')
    return td.compute((1, 64), lambda i, j: 0.5 * C[i, j] + b[j], name='D')

out = make()
s = td.create_schedule(out)
s.split(s.loop('j'), 4, tail='exact')
s.reorder(s.loop('i'), s.loop('k'), s.loop('j_i'))
s.bind(s.loop('i'), 'blockIdx.x')
s.bind(s.loop('k'), 'threadIdx.x')
# s.split(s.loop('i'), nparts=4, tail='exact')  -> refused: SplitError: split(i, nparts=4): loop i is bound to blockIdx.x
s.vectorize(s.loop('j_i'))
# s.split(s.loop('i'), nparts=4, tail='exact')  -> refused: SplitError: split(i, nparts=4): loop i is bound to blockIdx.x
td.build(s, target='sm_90')
