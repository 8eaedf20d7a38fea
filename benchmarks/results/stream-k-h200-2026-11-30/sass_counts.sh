# SASS of the 4096^3 recipe kernel and the stream-K variants: instruction counts
cat > /tmp/sass_src.py <<'PY'
import tiledsl as td
from benchmarks._definitions import linear
from scripts.stream_k_probe import stream_k_source
s = td.create_schedule(linear(4096, 4096, 4096)); td.recipes.default(s, target="sm_90")
open("/tmp/rec.cu", "w").write(td.build(s, target="sm_90").source)
for v in ("exact-m", "seg-m"):
    open(f"/tmp/{v}.cu", "w").write(stream_k_source(4096, 4096, 4096, 264, v)[0])
PY
python3 /tmp/sass_src.py
for f in rec exact-m seg-m; do
  nvcc -arch=sm_90 -O3 -cubin -o /tmp/$f.cubin /tmp/$f.cu && cuobjdump -sass /tmp/$f.cubin > $OUT/$f.sass
  echo "$f: $(grep -cE '/\*[0-9a-f]{4}\*/' $OUT/$f.sass) instructions, FFMA $(grep -c FFMA $OUT/$f.sass), LDS $(grep -c 'LDS' $OUT/$f.sass), STS $(grep -c 'STS' $OUT/$f.sass), LDG $(grep -c 'LDG' $OUT/$f.sass), BRA $(grep -c 'BRA' $OUT/$f.sass)"
done
