#!/usr/bin/env bash
# make fuzz: every native fuzz target (func FuzzXxx(*testing.F)) of the root
# module and of examples/, one after the other, FUZZTIME each. A target
# fails when it finds a failing input (go test writes it under the
# package's testdata/fuzz/<Target>/: check it in with its fix) and when it
# fuzzes fewer than MIN_RATE inputs per second: a target that stalls (an
# execution that waits on real time, or on a clock it does not advance) is
# a check that cannot fail. The rate is the target's executions over its
# elapsed time, from the last progress line go test prints
# ("fuzz: elapsed: 30s, execs: 123456 (4115/sec), ..."); the per-interval
# rate in parentheses is not used, it is 0/sec on the final line.
#
# Variables: FUZZTIME (default 30s), MIN_RATE (default 1000 inputs/s),
# FUZZMINIMIZETIME (default 2s: how long go test minimizes each new input
# before it counts its executions; its own default, 60s, leaves a target
# that finds inputs of a few KiB at 0/sec for the whole run, because
# minimizing is quadratic in the input's length), ONLY (a regexp: only the
# targets it matches), GO (default go).
set -uo pipefail
cd "$(dirname "$0")/.."

GO=${GO:-go}
FUZZTIME=${FUZZTIME:-30s}
FUZZMINIMIZETIME=${FUZZMINIMIZETIME:-2s}
MIN_RATE=${MIN_RATE:-1000}
ONLY=${ONLY:-.}

# targets prints "module ./package target" for every fuzz target of the
# module in directory $1 (the directories of other modules left out),
# found in the sources, so that a package that does not build yet fails
# only its own targets.
targets() {
	(cd "$1" && find . \( -name node_modules -o -name testdata -o -name '.*' ! -name . \) -prune -o -name '*_test.go' -print |
		while read -r file; do
			dir=$(dirname "$file")
			# the nearest go.mod above the file must be this module's
			d=$dir; while [ "$d" != . ] && [ ! -f "$d/go.mod" ]; do d=$(dirname "$d"); done
			[ "$d" = . ] || continue
			sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)(f \*testing\.F) {$/\1/p' "$file" | while read -r name; do
				echo "$1 $dir $name"
			done
		done | sort)
}

list=$( { targets .; targets examples; } | awk -v re="$ONLY" '$3 ~ re')
[ -n "$list" ] || { echo "fuzz: no fuzz target matches ONLY=$ONLY"; exit 1; }

log=$(mktemp)
trap 'rm -f "$log"' EXIT
results=()
failed=0
while read -r mod pkg name; do
	where=${pkg#./}
	[ "$mod" = . ] || where=$mod/$where
	echo "== $name ($where), $FUZZTIME"
	fuzz() {
		(cd "$mod" && "$GO" test -run '^$' -fuzz "^${name}\$" -fuzztime "$FUZZTIME" -fuzzminimizetime "$FUZZMINIMIZETIME" "$pkg") 2>&1 | tee "$log"
		return "${PIPESTATUS[0]}"
	}
	rc=0; fuzz || rc=$?
	# Go's fuzzing coordinator (before Go 1.27, go.dev/issue/75804) can
	# fail a target with a bare "context deadline exceeded" when -fuzztime
	# ends while a starved worker is mid-input: no failing input is written.
	# Such a run is retried, twice at most (on a loaded runner it came in
	# about one target run in fifteen); a failing input, a panic or any
	# other failure is never retried.
	for retry in 1 2; do
		if [ "$rc" -ne 0 ] && grep -q '^    context deadline exceeded$' "$log" &&
			! grep -q 'Failing input written\|panic:\|_test.go:[0-9]' "$log"; then
			echo "fuzz: $name: a bare 'context deadline exceeded' at -fuzztime's end, no failing input (go.dev/issue/75804): retry $retry"
			rc=0; fuzz || rc=$?
		fi
	done
	# elapsed as go test prints a duration: 59s, 1m0s, 1h0m0s
	read -r elapsed execs < <(awk '
		/^fuzz: elapsed: [0-9hms]+, execs: [0-9]+ / {
			d = $3; x = $5; e = 0
			if (match(d, /[0-9]+h/)) e += 3600 * substr(d, RSTART, RLENGTH - 1)
			if (match(d, /[0-9]+m/)) e += 60 * substr(d, RSTART, RLENGTH - 1)
			if (match(d, /[0-9]+s/)) e += substr(d, RSTART, RLENGTH - 1)
		}
		END { print e + 0, x + 0 }' "$log")
	rate=$(( elapsed > 0 ? execs / elapsed : execs ))
	verdict=ok
	if [ "$rc" -ne 0 ]; then
		verdict="FAIL (see above; a failing input is in $where/testdata/fuzz/$name/)"
	elif [ "$rate" -lt "$MIN_RATE" ]; then
		verdict="TOO SLOW (under $MIN_RATE/s: it stalls)"
	fi
	[ "$verdict" = ok ] || failed=1
	results+=("$(printf '%-22s %-48s %10d execs %4ds %8d/s  %s' "$name" "$where" "$execs" "$elapsed" "$rate" "$verdict")")
done <<<"$list"

echo
echo "fuzz: FUZZTIME=$FUZZTIME each, at least $MIN_RATE inputs/s"
printf '%s\n' "${results[@]}"
exit $failed
