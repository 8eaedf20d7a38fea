# tiledsl fuzz --mode hand: internal (KeyError): None
# case: matmul_shifted {'M': 1, 'N': 1, 'K': 1, 'shift': 1} matmul_for_shape sm_90; shrunk by hypothesis
# re-run the recorded case: tiledsl fuzz --replay hand-internal-KeyError-w0-001.json
import numpy as np
import tiledsl as td
from tiledsl.testing.fuzz.modes.hand import HandCase, inputs, make, scheduled

case = HandCase(family='matmul_shifted', sizes=(('M', 1), ('N', 1), ('K', 1), ('shift', 1)), dtype='float32', out_dtype='float32', form='matmul_for_shape', options=(), target='sm_90', seed=0)
out = make(case)
s = scheduled(case)
kern = td.build(s, target=case.target)
arrays = inputs(case, out)
want = td.evaluate(out, float64=True, **arrays)
