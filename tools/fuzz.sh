#!/usr/bin/env bash
# Run every fuzz target of the module, one after the other (go test runs
# one fuzz target per invocation).
#
#   tools/fuzz.sh                 # each target for FUZZTIME (default 500x)
#   FUZZTIME=90s FUZZPARALLEL=1 FUZZREPORT=fuzz.tsv tools/fuzz.sh
#   tools/fuzz.sh ./source/ ./render/   # only these packages
#
# FUZZTIME       -fuzztime of each target: a count of inputs (500x) or a
#                duration (90s). Seed inputs and testdata/fuzz are run
#                first and are not counted.
# FUZZTARGETS    a regular expression of the targets to run (default: all).
# FUZZPARALLEL   fuzzing workers per target (default: GOMAXPROCS).
# FUZZMINIMIZE   -fuzzminimizetime for an input that finds new coverage
#                (default 100x: with go's 60s, or even 10s, minimizing the
#                new inputs takes most of a run's time; a 90s run of
#                FuzzUntar with 10s ran 35 inputs).
# FUZZCACHE      the corpus folder, one subfolder per package (default: a
#                new temporary folder, so a run starts from the seeds and
#                testdata/fuzz only and its figures are its own).
# FUZZBUILDFLAGS how each package's test binary is built (default -fuzz=.:
#                coverage instrumentation of every package it links, which
#                a cold build cache compiles anew). make test's brief run
#                passes -trimpath -vet=off -ldflags=-w with CGO_ENABLED=0
#                instead (go test -c vets too, unless told not to), as the
#                guard's binary is built: the binaries then reuse the
#                packages that build compiled, and the fuzzer mutates the
#                seeds without coverage guidance (and without the race
#                detector, which made it seven times slower).
# FUZZBINDIR     where each package's test binary is written, named as
#                go test -o DIR/ names it (default: a temporary folder).
#                make test passes bin/test-norace, where test-norace's go
#                test writes its binaries with the same flags: they are
#                then up to date and are not linked again.
# FUZZREPORT     a file to write one tab-separated line per target to:
#                package, target, time, executions, new interesting,
#                corpus total, result.
#
# Each package's test binary is built once (FUZZBUILDFLAGS) and run for each of its targets from the package's
# folder, so that a failing input is written to the package's
# testdata/fuzz/FuzzName/ (commit it with the fix: it is then a test).
set -euo pipefail
cd "$(dirname "$0")/.."

GO=${GO:-go}
FUZZTIME=${FUZZTIME:-500x}
FUZZMINIMIZE=${FUZZMINIMIZE:-100x}
FUZZPARALLEL=${FUZZPARALLEL:-}
read -r -a buildflags <<<"${FUZZBUILDFLAGS:--fuzz=.}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cache=${FUZZCACHE:-$work/corpus}
report=${FUZZREPORT:-}
[ -n "$report" ] && : >"$report"

if [ $# -gt 0 ]; then
	pkgs=("$@")
else
	mapfile -t pkgs < <(git ls-files --cached --others --exclude-standard '*_test.go' ':!third_party' | xargs grep -l '^func Fuzz' | xargs -n1 dirname | sort -u | sed 's|^|./|')
fi

start=$(date +%s)
failed=()
n=0
for pkg in "${pkgs[@]}"; do
	pkg=${pkg%/}
	importpath=$($GO list "$pkg")
	if [ -n "${FUZZBINDIR:-}" ]; then
		mkdir -p "$FUZZBINDIR"
		bin="$FUZZBINDIR/${importpath##*/}.test"
	else
		bin="$work/$(echo "$importpath" | tr / _).test"
	fi
	if ! $GO test -c "${buildflags[@]}" -o "$bin" "$pkg"; then
		echo "fuzz FAIL $pkg: does not build" >&2
		failed+=("$pkg (build)")
		continue
	fi
	mapfile -t targets < <(cd "$pkg" && "$bin" -test.list '^Fuzz' | grep '^Fuzz' | grep -E "^(${FUZZTARGETS:-.*})\$" || true)
	for target in "${targets[@]}"; do
		n=$((n + 1))
		args=(-test.run='^$' -test.fuzz="^${target}\$" -test.fuzztime="$FUZZTIME"
			-test.fuzzminimizetime="$FUZZMINIMIZE" -test.fuzzcachedir="$cache/$importpath"
			-test.timeout=30m)
		[ -n "$FUZZPARALLEL" ] && args+=(-test.parallel="$FUZZPARALLEL")
		log="$work/$target.log"
		t0=$(date +%s.%N)
		result=ok
		(cd "$pkg" && "$bin" "${args[@]}") >"$log" 2>&1 || result=FAIL
		t1=$(date +%s.%N)
		# fuzz: elapsed: 1m30s, execs: 123456 (1371/sec), new interesting: 12 (total: 40)
		last=$(grep -E '^fuzz: elapsed: .*execs: ' "$log" | tail -1 || true)
		execs=$(sed -nE 's/.*execs: ([0-9]+).*/\1/p' <<<"$last")
		newi=$(sed -nE 's/.*new interesting: ([0-9]+).*/\1/p' <<<"$last")
		total=$(sed -nE 's/.*\(total: ([0-9]+)\).*/\1/p' <<<"$last")
		secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.0f", b - a }')
		printf 'fuzz %-4s %-22s %-16s %4ss  execs %-9s new interesting %-4s corpus %s\n' \
			"$result" "$pkg" "$target" "$secs" "${execs:-0}" "${newi:-0}" "${total:-?}"
		[ -n "$report" ] && printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$pkg" "$target" "$secs" "${execs:-0}" "${newi:-0}" "${total:-}" "$result" >>"$report"
		if [ "$result" != ok ]; then
			failed+=("$pkg $target")
			grep -v '^fuzz: elapsed' "$log" | tail -40 >&2
		fi
	done
done
echo "fuzz: $n targets, FUZZTIME=$FUZZTIME each, $(($(date +%s) - start))s"
if [ ${#failed[@]} -gt 0 ]; then
	printf 'fuzz: FAILED %s (the failing input is in its testdata/fuzz/)\n' "${failed[@]}" >&2
	exit 1
fi
