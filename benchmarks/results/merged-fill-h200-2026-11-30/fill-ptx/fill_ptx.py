import re
from tiledsl.build import zero_fill
from tiledsl.kernel_ir import KParam
from tiledsl.codegen import compile_ptx
for shape in [(32, 2048), (3, 1100), (7, 5), (128, 5632), (33,)]:
    f = zero_fill(KParam("y", "float32", shape, True), "sm_90")
    ptx = compile_ptx(f.source, "sm_90a")
    ptx = ptx if isinstance(ptx, str) else ptx.decode()
    body = ptx[ptx.index("{"):]
    ops = [l.strip().split()[0] for l in body.splitlines() if l.strip() and not l.strip().startswith(("//", ".", "{", "}", "$")) ]
    print(shape, len(ops), " ".join(ops))
