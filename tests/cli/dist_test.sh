#!/usr/bin/env bash
# Distributed calibration and QAT through the CLI: --workers, --dist-url and
# torchrun's variables give the same model file as one process for MinMax
# observers (2 and 4 ranks, uneven shards); Histogram observers stay close;
# QAT on 2 ranks matches one process on the same items; every fault (a rank
# that never joins or dies, bad address, port in use, mismatched world size,
# conflicting options) is one error line, exit 1 and no output; and, as root,
# two ranks on two hosts made of network namespaces.
#   dist_test.sh QFX_BINARY SOURCE_DIR
set -u
qfx=$1
source_dir=$2
work=$(mktemp -d)
namespaces=()
cleanup() {
  for ns in "${namespaces[@]}"; do ip netns delete "$ns" 2>/dev/null; done
  pkill -P $$ 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
source "$(dirname "$0")/common.sh"

model="$source_dir/examples/fashion_mnist/fashion_cnn.pt"
data=/usr/share/datasets/fashion-mnist
train="$data/train-images-idx3-ubyte.gz"
test="$data/t10k-images-idx3-ubyte.gz"
norm=(--mean 0.2860 --std 0.3530)
calib=(--calib "$train" "${norm[@]}" --batch-size 32 --calib-batches 63 -q)
cat >"$work/minmax.json" <<'EOF'
{"": {"activation": {"type": "MinMaxObserver"}, "weight": "default_per_channel_weight_observer"}}
EOF

# A free TCP port on the loopback.
free_port() {
  /usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# --- MinMax: bit-identical to one process -------------------------------------
"$qfx" quantize "$model" -o "$work/one.pt" "${calib[@]}" --qconfig "$work/minmax.json" --report "$work/one.json" ||
  fail "one-process quantize failed"
for n in 2 4; do
  "$qfx" quantize "$model" -o "$work/w$n.pt" "${calib[@]}" --qconfig "$work/minmax.json" --workers "$n" ||
    fail "--workers $n failed"
  cmp -s "$work/one.pt" "$work/w$n.pt" || fail "--workers $n: the model differs from one process's (MinMax)"
done

# torchrun's variables, and --dist-url, with two processes started here.
port=$(free_port)
for rank in 1 0; do
  MASTER_ADDR=127.0.0.1 MASTER_PORT=$port WORLD_SIZE=2 RANK=$rank \
    "$qfx" quantize "$model" -o "$work/env$rank.pt" "${calib[@]}" --qconfig "$work/minmax.json" &
done
wait
cmp -s "$work/one.pt" "$work/env0.pt" || fail "torchrun variables: rank 0's model differs from one process's"
[ ! -e "$work/env1.pt" ] || fail "torchrun variables: rank 1 wrote an output"
port=$(free_port)
for rank in 1 0; do
  "$qfx" quantize "$model" -o "$work/url.pt" "${calib[@]}" --qconfig "$work/minmax.json" \
    --dist-url "tcp://127.0.0.1:$port" --world-size 2 --rank $rank &
done
wait
cmp -s "$work/one.pt" "$work/url.pt" || fail "--dist-url: the model differs from one process's"

# --- Histogram (the default qconfig): the merge stays close to one process ----
"$qfx" quantize "$model" -o "$work/h1.pt" "${calib[@]}" --report "$work/h1.json" || fail "histogram, one process"
"$qfx" quantize "$model" -o "$work/h2.pt" "${calib[@]}" --report "$work/h2.json" --workers 2 ||
  fail "histogram, --workers 2"
/usr/bin/python3 - "$work/h1.json" "$work/h2.json" <<'EOF' || fail "histogram merge: output scales differ by more than 10%"
import json, sys
one, two = (json.load(open(f))["nodes"] for f in sys.argv[1:])
for a, b in zip(one, two):
    qa, qb = a.get("output_qparams"), b.get("output_qparams")
    if qa and qb and abs(qa["scale"] - qb["scale"]) > 0.1 * qa["scale"]:
        sys.exit(f"{a['name']}: {qa['scale']} vs {qb['scale']}")
EOF

# --- QAT: 2 ranks of 32 against one process of 64 (the same items per step) ---
qat=(--qconfig qat --train "$test" "${norm[@]}" --seed 0 --epochs 1 --lr 1e-4 -q)
"$qfx" quantize "$model" -o "$work/qat1.pt" "${qat[@]}" --batch-size 64 || fail "QAT, one process"
"$qfx" quantize "$model" -o "$work/qat2.pt" "${qat[@]}" --batch-size 32 --workers 2 || fail "QAT, --workers 2"
for n in 1 2; do
  "$qfx" eval "$work/qat$n.pt" --data "$test" "${norm[@]}" --json "$work/qat$n.eval.json" -q >/dev/null ||
    fail "eval of the QAT model ($n)"
done
/usr/bin/python3 - "$work/qat1.eval.json" "$work/qat2.eval.json" <<'EOF' || fail "QAT on 2 ranks: top-1 differs"
import json, sys
one, two = (100 * json.load(open(f))["top1"] for f in sys.argv[1:])
print(f"QAT top-1: one process {one:.2f}%, 2 ranks {two:.2f}%")
sys.exit(0 if abs(one - two) <= 0.5 else f"{one} vs {two}")
EOF

# --- Faults: one error line, exit 1, no output --------------------------------
port=$(free_port)
expect_error 1 "rank 0 of 2 .*did not all join within 2 s" -- quantize "$model" -o "$work/f.pt" "${calib[@]}" \
  --dist-url "tcp://127.0.0.1:$port" --world-size 2 --rank 0 --dist-timeout 2
expect_error 1 "rank 1 of 2 .*cannot reach rank 0's store" -- quantize "$model" -o "$work/f.pt" "${calib[@]}" \
  --dist-url "tcp://127.0.0.1:$port" --world-size 2 --rank 1 --dist-timeout 2
expect_error 1 "cannot resolve 'no-such-host.invalid'" -- quantize "$model" -o "$work/f.pt" "${calib[@]}" \
  --dist-url tcp://no-such-host.invalid:29500 --world-size 2 --rank 1
expect_error 1 "expected tcp://HOST:PORT" -- quantize "$model" -o "$work/f.pt" "${calib[@]}" \
  --dist-url 127.0.0.1:29500 --world-size 2 --rank 1
expect_error 1 "rank 2 is not in \[0, 2\)" -- quantize "$model" -o "$work/f.pt" "${calib[@]}" \
  --dist-url tcp://127.0.0.1:29500 --world-size 2 --rank 2
expect_error 1 "--workers starts its own group" -- quantize "$model" -o "$work/f.pt" "${calib[@]}" --workers 2 \
  --dist-url tcp://127.0.0.1:29500 --world-size 2 --rank 0
expect_error 1 "--world-size and --rank need --dist-url" -- quantize "$model" -o "$work/f.pt" "${calib[@]}" \
  --world-size 2
expect_error 1 "--dist-timeout must be in" -- quantize "$model" -o "$work/f.pt" "${calib[@]}" --workers 2 \
  --dist-timeout 0
expect_error 1 "--correct-bias and --adaround run in one process" -- quantize "$model" -o "$work/f.pt" \
  "${calib[@]}" --workers 2 --correct-bias
echo '{"": {"activation": "RecordingObserver", "weight": "default_weight_observer"}}' >"$work/recording.json"
expect_error 1 "RecordingObserver.*has no merge across ranks" -- quantize "$model" -o "$work/f.pt" "${calib[@]}" \
  --workers 2 --qconfig "$work/recording.json"

# Port in use: something else listens there.
/usr/bin/python3 -c 'import socket, sys, time
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(); print(s.getsockname()[1], flush=True); time.sleep(30)' \
  >"$work/listener" &
listener=$!
sleep 1
expect_error 1 "cannot start the store: .*Address already in use" -- quantize "$model" -o "$work/f.pt" \
  "${calib[@]}" --dist-url "tcp://127.0.0.1:$(cat "$work/listener")" --world-size 2 --rank 0 --dist-timeout 2
kill $listener

# Mismatched world sizes: rank 1 says 3, rank 0 says 2.
port=$(free_port)
"$qfx" quantize "$model" -o "$work/f0.pt" "${calib[@]}" --dist-url "tcp://127.0.0.1:$port" --world-size 2 --rank 0 \
  --dist-timeout 3 2>"$work/mismatch0" &
rank0=$!
sleep 0.5
expect_error 1 "started with world size 3, rank 0 with 2" -- quantize "$model" -o "$work/f1.pt" "${calib[@]}" \
  --dist-url "tcp://127.0.0.1:$port" --world-size 3 --rank 1 --dist-timeout 3
wait $rank0 && fail "mismatched world size: rank 0 exited 0"

# A rank that fails (its data is missing) and one that is killed: rank 0 stops.
port=$(free_port)
"$qfx" quantize "$model" -o "$work/f1.pt" --calib "$work/missing.idx" -q --dist-url "tcp://127.0.0.1:$port" \
  --world-size 2 --rank 1 2>/dev/null &
expect_error 1 "rank 0: distributed all-reduce: .*another rank failed" -- quantize "$model" -o "$work/f.pt" \
  "${calib[@]}" --dist-url "tcp://127.0.0.1:$port" --world-size 2 --rank 0
wait
"$qfx" quantize "$model" -o "$work/f.pt" --calib "$train" -q --batch-size 32 --calib-batches 1500 --workers 2 \
  2>"$work/killed" &
parent=$!
sleep 2
pkill -KILL -P $parent
wait $parent && fail "a killed worker: rank 0 exited 0"
# (on a loaded machine the worker may still be joining: the next case's error)
[ "$(wc -l <"$work/killed")" -eq 1 ] && grep -Eq "another rank failed|before the ranks joined" "$work/killed" ||
  fail "a killed worker: rank 0 said '$(cat "$work/killed")'"
# A worker killed as soon as it exists, while the ranks join: rank 0 stops at
# once rather than at the rendezvous timeout (300 s).
"$qfx" quantize "$model" -o "$work/f.pt" --calib "$train" -q --batch-size 32 --calib-batches 1500 --workers 2 \
  2>"$work/killed" &
parent=$!
until pgrep -P $parent >/dev/null || ! kill -0 $parent 2>/dev/null; do sleep 0.02; done
pkill -KILL -P $parent
start=$SECONDS
wait $parent && fail "a worker killed while joining: rank 0 exited 0"
[ $((SECONDS - start)) -lt 60 ] || fail "a worker killed while joining: rank 0 took $((SECONDS - start)) s to stop"
[ "$(cat "$work/killed")" = "qfx: error: --workers: rank 1 was killed by signal Killed before the ranks joined; no output written" ] ||
  fail "a worker killed while joining: rank 0 said '$(cat "$work/killed")'"
for f in f.pt f0.pt f1.pt; do [ ! -e "$work/$f" ] || fail "a failed distributed run wrote $f"; done
ls -A "$work" | grep -q '\.qfx-' && fail "a temporary file was left: $(ls -A "$work")"

# --- Two hosts: network namespaces joined by a veth pair ------------------------
if [ "$(id -u)" -ne 0 ] || ! command -v ip >/dev/null; then
  echo "SKIP two hosts: needs root and iproute2 (ip netns)"
else
  a=qfx-a-$$ b=qfx-b-$$
  namespaces=("$a" "$b")
  ip netns add "$a" && ip netns add "$b" &&
    ip link add "va$$" netns "$a" type veth peer name "vb$$" netns "$b" &&
    ip -n "$a" addr add 10.231.0.1/24 dev "va$$" && ip -n "$b" addr add 10.231.0.2/24 dev "vb$$" &&
    ip -n "$a" link set "va$$" up && ip -n "$b" link set "vb$$" up &&
    ip -n "$a" link set lo up && ip -n "$b" link set lo up || fail "cannot make the network namespaces"
  ip netns exec "$b" "$qfx" quantize "$model" -o "$work/hostb.pt" "${calib[@]}" --qconfig "$work/minmax.json" \
    --dist-url tcp://10.231.0.1:29500 --world-size 2 --rank 1 --dist-timeout 30 &
  ip netns exec "$a" "$qfx" quantize "$model" -o "$work/hosta.pt" "${calib[@]}" --qconfig "$work/minmax.json" \
    --dist-url tcp://10.231.0.1:29500 --world-size 2 --rank 0 --dist-timeout 30 || fail "two hosts: rank 0 failed"
  wait $! || fail "two hosts: rank 1 failed"
  cmp -s "$work/one.pt" "$work/hosta.pt" || fail "two hosts: the model differs from one process's"
fi

finish "distributed"
