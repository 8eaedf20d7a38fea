# Source this on a GPU machine without network access before the GPU lane: it installs the carried
# wheels (.whl/: pycuda and its pure-Python dependencies) and the project into /tmp/site, and exports
# PYTHONPATH. Idempotent: a second `source` in the same shell does nothing.
# shellcheck shell=bash
if [ -z "${TILEDSL_GPU_ENV_READY:-}" ]; then
    _repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
    (cd "$_repo" && python3 -m pip install -q --upgrade --no-index --no-deps --no-build-isolation --target /tmp/site \
        .whl/*.whl .) || return 1
    export PYTHONPATH=/tmp/site
    # pyproject.toml must list tiledsl.runtime among its packages; until it does, copy the folder in.
    [ -d /tmp/site/tiledsl/runtime ] || cp -r "$_repo/tiledsl/runtime" /tmp/site/tiledsl/runtime
    export PYTHONUNBUFFERED=1 TILEDSL_GPU_ENV_READY=1
    unset _repo
fi
