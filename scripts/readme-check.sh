#!/usr/bin/env bash
# Runs the README's commands as a new user would, so that a README that
# drifts from the code fails CI (.ci/run calls this after the tests).
#
# Every line of the README's code blocks runs, in order, each bounded in
# time (`# comments` at the end of a line are dropped):
#   - `cargo ...`, `scripts/...` and `examples/...` lines in the checkout;
#   - `pip ...` lines in the checkout, with the pip of a fresh virtual
#     environment in the scratch directory, and each ```python block as
#     one script, with that environment's python, in the scratch directory;
#   - `fsin ...` lines in a scratch directory (what they write stays
#     there), with the `fsin` that the README's `cargo install` line
#     installed (into the scratch directory: CARGO_INSTALL_ROOT) first on
#     PATH;
# except the lines that SKIP below names, each with its reason. A SKIP
# pattern that matches no line, or a NEED pattern that no line that ran
# matches, fails the check too: the list must follow the README.
#
#   scripts/readme-check.sh            run them all
#   scripts/readme-check.sh --list     only print what would run or be skipped
#
# Needs QEMU and the guest images for the QEMU lines (scripts/install-qemu.sh,
# which is itself one of the lines).
set -uo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
list=0
case "${1:-}" in
    --list) list=1 ;;
    "") ;;
    *) echo "usage: $0 [--list]" >&2; exit 2 ;;
esac

# Lines not run, as substrings of the line (or, after `=`, the whole
# line), each with why.
SKIP=(
    "cargo test --workspace --profile checked|the test suite: CI runs it just before"
    "-- bench|the speed benchmark: minutes, and its figures are for a quiet machine"
    "=examples/qemu/run.sh --guests 4|4 guests in lock-step, about 2 minutes: the 2-guest fsin qemu line covers lock-step"
    "--app hpcc|HPC Challenge on 4 guests: tens of minutes"
    "--app netpipe|NetPIPE's message sizes up to 64 KiB in lock-step: many minutes"
    "--guests 64 |the Simics paper's study on 64 guests: a 6-minute boot and a 3-minute launch, then each run's region"
)
# What must be among the lines that ran: the main job, run,
# topology, help config, kernel, and one fsin qemu line with 2 guests.
NEED=(
    "cargo install --locked --path sim-server"
    "cargo run --release -p sim-server -- demo"
    "cargo run --release -p sim-server -- run"
    "topology"
    "help config"
    "fsin kernel "
    "fsin qemu --guests 2 "
    "pip install"
    "venv/bin/python"
)

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
mkdir -p "$scratch/work"

# The README's code-block lines, comments dropped, a line that ends in a
# backslash joined with the next. A ```python block runs whole: it
# becomes one line `python-block FILE`, its text in FILE.
mapfile -t lines < <(awk -v dir="$scratch" '
    /^```/ {
        if (!inblock) {
            inblock = 1
            py = ($0 ~ /^```python/)
            if (py) { n++; file = dir "/block" n ".py"; print "python-block " file }
        } else {
            inblock = 0
            if (py) close(file)
            py = 0
        }
        next
    }
    inblock && py { print > file; next }
    inblock {
        sub(/[ \t]+#[ \t].*$/, "")
        sub(/[ \t]+$/, "")
        # A line ending in a backslash goes on on the next one.
        if ($0 ~ /\\$/) { sub(/\\$/, ""); held = held $0; next }
        $0 = held $0
        held = ""
        sub(/^[ \t]+/, "")
        if ($0 != "") print
    }' "$repo/README.md")

matches() { # LINE PATTERN: PATTERN is in LINE, or is =LINE
    local pattern=$2
    if [[ "$pattern" == =* ]]; then
        [ "$1" = "${pattern#=}" ]
    else
        [[ "$1 " == *"$pattern"* ]]
    fi
}

skip_entry() { # LINE: the SKIP entry (pattern|reason) that matches it
    local s
    for s in "${SKIP[@]}"; do
        if matches "$1" "${s%%|*}"; then
            echo "$s"
            return 0
        fi
    done
    return 1
}

# The README's `cargo install` line installs here, and `fsin` is looked
# up here first: this machine's ~/.cargo/bin is left alone.
export CARGO_INSTALL_ROOT="$scratch/install"
export PATH="$scratch/install/bin:$PATH"

passed=0
failed=0
failures=()
ran=()
declare -A skip_used
for line in "${lines[@]}"; do
    if entry=$(skip_entry "$line"); then
        skip_used["${entry%%|*}"]=1
        echo "skipped: $line (${entry#*|})"
        continue
    fi
    case "$line" in
        fsin\ *)
            dir="$scratch/work"
            if [ $list = 0 ] && [ "$(command -v fsin)" != "$scratch/install/bin/fsin" ]; then
                echo "FAILED: $line (fsin is not the one the README's cargo install line installs: $(command -v fsin || echo none))"
                failed=$((failed + 1))
                failures+=("$line (no installed fsin)")
                continue
            fi
            ;;
        cargo\ * | scripts/* | examples/*) dir="$repo" ;;
        pip\ *)
            # In a virtual environment of the scratch directory, from the
            # checkout (the README's `pip install ./python`).
            dir="$repo"
            [ $list = 1 ] || [ -x "$scratch/venv/bin/pip" ] || python3 -m venv "$scratch/venv"
            line="$scratch/venv/bin/$line"
            ;;
        python-block\ *)
            # A Python block, with the module that the pip line installed.
            dir="$scratch/work"
            line="$scratch/venv/bin/python ${line#python-block }"
            ;;
        *)
            echo "readme-check: no rule for the README line: $line" >&2
            failed=$((failed + 1))
            failures+=("$line (no rule: add one, or a SKIP)")
            continue
            ;;
    esac
    limit=300
    [[ "$line" == *qemu* ]] && limit=900
    # The first `cargo run --release` builds the release binary (408 s
    # from scratch on 2 cores; the test suite's build is another profile).
    [[ "$line" == cargo\ * ]] && limit=1200
    if [ $list = 1 ]; then
        echo "would run (${limit} s at most, in ${dir/#$repo/the checkout}): $line"
        ran+=("$line")
        continue
    fi
    log="$scratch/log.txt"
    start=$SECONDS
    (cd "$dir" && timeout --kill-after=10 "$limit" bash -c "$line") >"$log" 2>&1 </dev/null
    code=$?
    took=$((SECONDS - start))
    if [ $code = 0 ]; then
        echo "ok ($took s): $line"
        passed=$((passed + 1))
        ran+=("$line")
    else
        why="exit code $code"
        [ $code = 124 ] && why="still running after $limit s"
        echo "FAILED ($why, $took s): $line"
        tail -n 20 "$log" | sed 's/^/    | /'
        failed=$((failed + 1))
        failures+=("$line ($why)")
    fi
done

for s in "${SKIP[@]}"; do
    if [ -z "${skip_used["${s%%|*}"]:-}" ]; then
        echo "readme-check: the SKIP pattern '${s%%|*}' matches no README line: update scripts/readme-check.sh" >&2
        failed=$((failed + 1))
        failures+=("SKIP '${s%%|*}' is stale")
    fi
done
for n in "${NEED[@]}"; do
    found=0
    for l in "${ran[@]}"; do
        matches "$l" "$n" && found=1
    done
    if [ $found = 0 ]; then
        echo "readme-check: no README line that ran contains '$n'" >&2
        failed=$((failed + 1))
        failures+=("nothing ran '$n'")
    fi
done

[ $list = 1 ] && [ $failed = 0 ] && exit 0
for f in "${failures[@]}"; do
    echo "readme-check: failed: $f" >&2
done
echo "readme-check: $passed passed, $failed failed"
[ $failed = 0 ]
