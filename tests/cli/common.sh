# Helpers of the CLI test scripts (the functions use $qfx and $work):
# cli_test_args, fail, expect_error, and finish, which reports and sets the
# exit code.

failures=0

# cli_test_args QFX_BINARY FIXTURES_DIR PYTHON SOURCE_DIR: the arguments of
# cli_test.sh and cli_errors_test.sh, and $work, a directory removed on exit.
cli_test_args() {
  qfx=$1 fixtures=$2 python=$3 source_dir=$4
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
}

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
