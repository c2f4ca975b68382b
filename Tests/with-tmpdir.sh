#!/usr/bin/env bash
# with-tmpdir.sh DIR COMMAND...: runs COMMAND with TMPDIR set to DIR, emptied before and removed
# after, whatever COMMAND's status. The caches the tests open go on writing in the background
# after a test has removed its directory (a manager's disk store is not awaited unless asked):
# without this every run would leave small directories in /tmp. DIR is a fixed path, not a
# fresh one per run: SwiftPM plans a new build (every module compiled again) when TMPDIR changes.
set -uo pipefail
dir=$1
shift
rm -rf "$dir" && mkdir -p "$dir" || exit 1
trap 'rm -rf "$dir"' EXIT
TMPDIR="$dir" "$@"
