# Helpers of the CLI test scripts (sourced after they set $qfx and $work):
# fail, expect_error, and finish, which reports and sets the exit code.

failures=0

fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}

# expect_error CODE PATTERN -- ARGS...: qfx exits with CODE, prints exactly one
# line on stderr that matches PATTERN, and nothing on stdout.
expect_error() {
  local code=$1 pattern=$2
  shift 3
  "$qfx" "$@" >"$work/out" 2>"$work/err"
  local got=$?
  [ "$got" -eq "$code" ] || fail "qfx $* exited $got, expected $code"
  [ "$(wc -l <"$work/err")" -eq 1 ] || fail "qfx $*: stderr is not one line: $(cat "$work/err")"
  grep -qE -- "$pattern" "$work/err" || fail "qfx $*: stderr '$(cat "$work/err")' does not match '$pattern'"
  [ ! -s "$work/out" ] || fail "qfx $*: wrote to stdout on error"
}

# finish WHAT: the summary line, and exit 1 when a check failed.
finish() {
  if [ "$failures" -ne 0 ]; then
    echo "$failures $1 check(s) failed"
    exit 1
  fi
  echo "all $1 checks passed"
}
