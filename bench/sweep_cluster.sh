#!/usr/bin/env bash
# The issue-29 sweep on a Ray cluster started with `ray start --head` on this machine, then the same
# sweep again (served from the cache). Ends only the head it started (its process group), never `ray stop`.
#   bench/sweep_cluster.sh            (from the checkout; uses .venv, or $VENV)
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${VENV:-.venv}
PY="$VENV/bin/python"
WORK=$(mktemp -d /tmp/mcu-sweep-cluster.XXXX)
PORT=$("$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" MCU_GEN_CACHE="$WORK/cache"
setsid "$VENV/bin/ray" start --head --port "$PORT" --num-cpus "$(nproc)" --include-dashboard=false \
  --disable-usage-stats --block > "$WORK/head.log" 2>&1 &
HEAD=$!
trap 'kill -TERM -- -$HEAD 2>/dev/null; sleep 10; kill -KILL -- -$HEAD 2>/dev/null || true' EXIT
until grep -q "Ray runtime started" "$WORK/head.log"; do sleep 1; done
SWEEP=(sweep --model examples/mnist/model.py --model examples/kws_dscnn/model.py --board mps2-an505
       --board mps3-an547 --quantize none,int8 --kernels library,auto --address "127.0.0.1:$PORT" --out "$WORK/out")
for run in first second; do
  start=$(date +%s.%N)
  "$PY" -m mcu_gen.cli "${SWEEP[@]}"
  echo "sweep_cluster: $run run $(echo "$(date +%s.%N) - $start" | bc) s"
done
