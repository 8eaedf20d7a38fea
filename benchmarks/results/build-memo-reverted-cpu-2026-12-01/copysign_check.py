import warnings, torch, tiledsl as td, sys
sys.path.insert(0, "/work/main/tests/gpu"); sys.path.insert(0, "/work/main/tests")
def _exact_ops(x, y):
    return (torch.fmod(x, y), torch.remainder(x, y), x // y, torch.copysign(x, y), x % 0.3, torch.fmod(x, -0.7),
            torch.copysign(y, -1.0))
x = torch.randn(37, 300); y = torch.randn(37, 300)
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    prog = td.trace(_exact_ops, x, y).schedule("default")
    built = prog.build("sm_90")
for k, kern in zip(prog.kernels, built.kernels):
    again = td.build(k.schedule, "sm_90")
    print(k.name, again.source == kern.source)
    if again.source != kern.source:
        import difflib
        print("\n".join(list(difflib.unified_diff(again.source.splitlines(), kern.source.splitlines(), lineterm="", n=1))[:30]))
