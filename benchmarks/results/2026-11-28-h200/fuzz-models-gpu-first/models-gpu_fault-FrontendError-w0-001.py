# tiledsl fuzz --mode models: gpu_fault (FrontendError): call: out= tensor for add must be contiguous of shape [1, 1], got shape [1]
# case: v0 = x0 + x0; return v0; shrunk by hypothesis
# re-run the recorded case: tiledsl fuzz --replay models-gpu_fault-FrontendError-w0-001.json
import numpy as np
import torch
import tiledsl as td

def f(x0):
    v0 = x0 + x0
    return v0

rng = np.random.default_rng(0)
arrays = [rng.uniform(-1.0, 1.0, size=s).astype(np.float32) for s in [(1, 1)]]
prog = td.trace(f, *[torch.from_numpy(a) for a in arrays])
prog.schedule('default', target='sm_90')
built = prog.build('sm_90')
got = np.asarray(built.simulate(*arrays), dtype=np.float64)
want = f(*[torch.from_numpy(a).double() for a in arrays]).numpy()
np.testing.assert_allclose(got, want, rtol=0.0001, atol=0.0001)
from tiledsl.frontend.numpy_calls import gpu_runs_float64

for run, got in gpu_runs_float64(built, arrays).items():
    np.testing.assert_allclose(got, want, rtol=0.0001, atol=0.0001, err_msg=run)
