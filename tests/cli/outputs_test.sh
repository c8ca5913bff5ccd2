#!/usr/bin/env bash
# The output writer, through the CLI: qfx writes a stream (a pipe, terminal
# or character device: /dev/stdout, a fifo, /dev/full) in place, never
# replaces anything else that is not a regular file (a directory), writes
# through symlinks, refuses to overwrite its own inputs (unless --force),
# leaves every existing output untouched and no temporary file behind when
# any of a command's writes fails (a full disk included: outputs are all or
# nothing), gives one whole file when two processes write the same path, and
# treats a failed write to standard output as an error.
#   outputs_test.sh QFX_BINARY FIXTURES_DIR PYTHON SOURCE_DIR
set -u
qfx=$1
fixtures=$2
python=$3
source_dir=$4
work=$(mktemp -d)
mounted=""
cleanup() {
  [ -n "$mounted" ] && umount "$mounted"
  rm -rf "$work"
}
trap cleanup EXIT
source "$(dirname "$0")/common.sh"

# no_temporaries DIR: no temporary file of the writer is left in DIR.
no_temporaries() {
  ls -A "$1" | grep -q '\.qfx-' && fail "a temporary file was left in $1: $(ls -A "$1")"
}

model="$fixtures/linear_relu.pt"
input="$fixtures/linear_relu.input.pt"
cnn="$source_dir/examples/fashion_mnist/fashion_cnn.pt"
batch="$source_dir/examples/fashion_mnist/sample_batch.pt"
run_to() { "$qfx" run "$model" --input "$input" -o "$@"; }

# --- streams (pipes, terminals, character devices) are written in place; ------
# --- what is neither a stream nor a regular file is never replaced -------------
expect_error 1 "cannot write '/dev/full': No space left on device" -- \
  quantize "$cnn" -o /dev/full --calib "$batch" -q
[ -c /dev/full ] || fail "/dev/full is no longer a character device"
mkfifo "$work/fifo"
expect_error 1 "cannot write '.*fifo': no process reads the fifo" -- run "$model" --input "$input" -o "$work/fifo"
[ -p "$work/fifo" ] || fail "the fifo was replaced"
cat "$work/fifo" >"$work/from_fifo.pt" &
reader=$!
sleep 0.2  # the reader opens the fifo
run_to "$work/fifo" || fail "run -o FIFO with a reader exited $?"
wait "$reader"
run_to "$work/direct.pt" && cmp -s "$work/from_fifo.pt" "$work/direct.pt" || fail "run -o FIFO wrote other bytes"
"$qfx" quantize "$cnn" -o "$work/stdout_report.pt" --calib "$batch" -q --report /dev/stdout | \
  "$python" -c "import json, sys; assert json.load(sys.stdin)['schema_version'] == 2" \
  || fail "quantize --report /dev/stdout (a pipe) is not the report"
"$qfx" quantize "$cnn" -o "$work/null_report.pt" --calib "$batch" -q --report /dev/null || fail "--report /dev/null exited $?"
[ -c /dev/null ] || fail "/dev/null is no longer a character device"
expect_error 1 "cannot write '/dev/stdout': standard output carries this command's own text" -- \
  compare "$cnn" "$work/null_report.pt" --data "$batch" --json /dev/stdout
mkdir "$work/dir"
expect_error 1 "cannot write '.*dir': it is a directory" -- quantize "$cnn" -o "$work/dir" --calib "$batch" -q
expect_error 1 "cannot write '.*missing/out.pt': directory '.*missing': No such file or directory" -- \
  run "$model" --input "$input" -o "$work/missing/out.pt"
expect_error 2 "output file name cannot be empty" -- quantize "$cnn" -o "" --calib "$batch"
expect_error 1 "cannot write '.*same.json' twice" -- \
  quantize "$cnn" -o "$work/same.json" --report "$work/same.json" --calib "$batch" -q
[ ! -e "$work/same.json" ] || fail "two outputs on one file wrote it"
no_temporaries "$work"

# --- symlinks are written through, to their target ---------------------------
echo old >"$work/target.pt"
ln -s target.pt "$work/link.pt"
run_to "$work/link.pt" || fail "run -o link.pt exited $?"
[ -L "$work/link.pt" ] || fail "the symlink was replaced by a file"
ln -s "$work/absent.pt" "$work/dangling.pt"
run_to "$work/dangling.pt" || fail "run -o dangling.pt exited $?"
[ -L "$work/dangling.pt" ] && [ -f "$work/absent.pt" ] || fail "a dangling symlink's target was not created"
ln -s loop_b "$work/loop_a"
ln -s loop_a "$work/loop_b"
expect_error 1 "cannot write '.*loop_a': too many levels of symbolic links" -- run "$model" --input "$input" -o "$work/loop_a"
"$python" - "$work/target.pt" "$work/absent.pt" "$fixtures/linear_relu.output.pt" <<'EOF' || fail "a file written through a symlink is wrong"
import sys, torch
for path in sys.argv[1:3]:
    assert torch.equal(torch.load(path), torch.load(sys.argv[3])) or \
        (torch.load(path) - torch.load(sys.argv[3])).abs().max() < 1e-5, path
EOF

# --- an existing file keeps its permissions ----------------------------------
chmod 640 "$work/target.pt"
run_to "$work/target.pt" || fail "rewriting target.pt exited $?"
[ "$(stat -c %a "$work/target.pt")" = 640 ] || fail "rewriting changed the mode to $(stat -c %a "$work/target.pt")"

# --- inputs are not overwritten, by any path, unless --force ------------------
cp "$input" "$work/in.pt"
ln -s in.pt "$work/in_link.pt"
ln "$work/in.pt" "$work/in_hard.pt"
for out in in.pt in_link.pt in_hard.pt; do
  expect_error 1 "cannot write '.*$out': it is the input file '.*in.pt' of this command \(pass --force" -- \
    run "$model" --input "$work/in.pt" -o "$work/$out"
done
cmp -s "$input" "$work/in.pt" || fail "a refused write changed the input"
cp "$cnn" "$work/cnn.pt"
expect_error 1 "cannot write '.*cnn.pt': it is the input file" -- quantize "$work/cnn.pt" -o "$work/cnn.pt" --calib "$batch" -q
cmp -s "$cnn" "$work/cnn.pt" || fail "quantize changed its input model"
expect_error 1 "it is the input file '.*sample_batch.pt'" -- quantize "$cnn" -o "$work/q.pt" --calib "$batch" \
  --report "$batch" -q
"$qfx" run "$model" --input "$work/in.pt" -o "$work/in.pt" --force || fail "run --force over its input exited $?"
"$python" -c "import torch, sys; torch.load(sys.argv[1])" "$work/in.pt" || fail "the forced output is not a torch.save file"

# --- a failed write leaves the old file and no temporary file -----------------
echo keep >"$work/kept.pt"
"$python" -c "import torch, sys; x = torch.rand(4, 1, 28, 28); x[0, 0, 0, 0] = float('nan'); torch.save(x, sys.argv[1])" \
  "$work/nan.pt"
expect_error 1 "holds NaN" -- quantize "$cnn" -o "$work/kept.pt" --calib "$work/nan.pt" -q
[ "$(cat "$work/kept.pt")" = keep ] || fail "a failed quantize changed the existing output"
no_temporaries "$work"
if [ "$(id -u)" -eq 0 ] && mkdir "$work/small" && mount -t tmpfs -o size=64k tmpfs "$work/small" 2>/dev/null; then
  mounted="$work/small"
  echo keep >"$work/small/model.pt"
  expect_error 1 "cannot write '.*small/model.pt': No space left on device" -- \
    quantize "$cnn" -o "$work/small/model.pt" --calib "$batch" -q
  [ "$(cat "$work/small/model.pt")" = keep ] || fail "a full disk changed the existing output"
  no_temporaries "$work/small"
  expect_error 1 "cannot write '.*report.html': No space left on device" -- \
    quantize "$cnn" -o "$work/q_small.pt" --calib "$batch" --report-html "$work/small/report.html" -q
  [ ! -e "$work/small/report.html" ] || fail "a full disk left a partial report"
  [ ! -e "$work/q_small.pt" ] || fail "a report that failed left the model it came with (outputs are all or nothing)"
  echo keep >"$work/q_kept.pt"
  head -c 1M /dev/zero >"$work/small/filler" 2>/dev/null  # the disk full
  expect_error 1 "cannot write '.*small/report.json': No space left on device" -- \
    quantize "$cnn" -o "$work/q_kept.pt" --calib "$batch" --report "$work/small/report.json" -q
  [ "$(cat "$work/q_kept.pt")" = keep ] || fail "a report that failed replaced the existing model"
  no_temporaries "$work/small"
  no_temporaries "$work"
  umount "$work/small" && mounted=""
else
  echo "SKIP: full-disk case (needs root and a tmpfs mount)"
fi

# --- two processes writing one path leave one whole file ---------------------
"$python" -c "import torch, sys; torch.save(torch.rand(64, 5), sys.argv[1]); torch.save(torch.rand(64, 5) * 2, sys.argv[2])" \
  "$work/in1.pt" "$work/in2.pt"
"$qfx" run "$model" --input "$work/in1.pt" -o "$work/out1.pt" && "$qfx" run "$model" --input "$work/in2.pt" -o "$work/out2.pt" \
  || fail "the concurrent writers' references failed"
for round in 1 2 3 4 5; do
  "$qfx" run "$model" --input "$work/in1.pt" -o "$work/shared.pt" &
  "$qfx" run "$model" --input "$work/in2.pt" -o "$work/shared.pt" &
  wait
  cmp -s "$work/shared.pt" "$work/out1.pt" || cmp -s "$work/shared.pt" "$work/out2.pt" \
    || fail "round $round: two writers left a file that is neither output"
done
no_temporaries "$work"

# --- standard output: -o - and write errors -----------------------------------
"$qfx" run "$model" --input "$input" -o - >"$work/stdout.pt" || fail "run -o - exited $?"
cmp -s "$work/stdout.pt" "$work/target.pt" || fail "run -o - wrote other bytes than run -o FILE"
"$qfx" quantize "$cnn" -o - --calib "$batch" -q >"$work/stdout_int8.pt" || fail "quantize -o - exited $?"
"$python" -c "import torch, sys; torch.jit.load(sys.argv[1])(torch.rand(2, 1, 28, 28))" "$work/stdout_int8.pt" \
  || fail "quantize -o - did not write a loadable model"
expect_error 1 "cannot write '-': standard output carries this command's own text" -- \
  quantize "$cnn" -o - --calib "$batch" --print -q
exec 3>/dev/full
"$qfx" print "$model" >&3 2>"$work/stderr"
[ $? -eq 1 ] && [ "$(cat "$work/stderr")" = "qfx: error: cannot write to standard output: No space left on device" ] \
  || fail "print to /dev/full: $(cat "$work/stderr")"
"$qfx" qconfig dump onednn >&3 2>"$work/stderr"
[ $? -eq 1 ] && grep -q "No space left on device" "$work/stderr" || fail "qconfig dump to /dev/full: $(cat "$work/stderr")"
"$qfx" backend-config docs >&3 2>"$work/stderr"
[ $? -eq 1 ] && grep -q "No space left on device" "$work/stderr" || fail "backend-config docs to /dev/full: $(cat "$work/stderr")"
"$qfx" run "$model" --input "$input" -o - >&3 2>"$work/stderr"
[ $? -eq 1 ] && grep -q "cannot write to standard output: No space left on device" "$work/stderr" \
  || fail "run -o - to /dev/full: $(cat "$work/stderr")"
exec 3>&-

finish output
