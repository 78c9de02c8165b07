#!/usr/bin/env bash
# The container's entry point: pull the model tiers named in APACE_PULL into the /data
# volume at first start (sha256-verified; kept for later starts), then run `apace` with
# the container's arguments, plus APACE_FLAGS (e.g. the low-memory profile's) for `serve`
# and `wyoming`.
set -euo pipefail
for tier in ${APACE_PULL:-}; do
  apace models pull "$tier"
done
command=${1:-serve}
shift || true
case "$command" in
  serve|wyoming)
    # shellcheck disable=SC2086  # APACE_FLAGS is a list of flags, split on purpose
    exec apace "$command" ${APACE_FLAGS:-} "$@"
    ;;
  *)
    exec apace "$command" "$@"
    ;;
esac
