# tests/verdict.sh: the tally of a shell test script, sourced by the
# packaging checks, fuzz/smoke.sh and fuzz/oss_fuzz_check.sh.
#
#   verdict STATUS DESCRIPTION [LOG]   counts one check: STATUS 0 passes;
#                                      a failure prints LOG's last lines
#   summary                            prints "N passed, N failed" (the
#                                      line CI counts); false on a failure
passed=0
failed=0

verdict() {
    if [ "$1" = 0 ]; then
        passed=$((passed + 1))
        echo "ok     $2"
    else
        failed=$((failed + 1))
        echo "FAILED $2"
        if [ -n "${3:-}" ] && [ -f "$3" ]; then
            tail -n 30 "$3" | sed 's/^/    /'
        fi
    fi
}

summary() {
    echo "$passed passed, $failed failed"
    [ "$failed" = 0 ]
}
