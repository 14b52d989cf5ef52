# Sourced by scripts/test and .ci/run: `step "what" "usual duration" command...` prints a
# timestamped line before the command, one every minute while it runs (pip and compilers can be
# silent for minutes), and how long it took; it returns the command's exit status.
now() { date -u +%H:%M:%S; }

step() {
  local what=$1 usual=$2 t0 beat rc
  shift 2
  t0=$(date +%s)
  echo "[$(now)] $what ($usual)"
  ( while sleep 60; do echo "[$(now)]   ... still $what: $(( $(date +%s) - t0 )) s so far"; done ) &
  beat=$!
  if "$@"; then rc=0; else rc=$?; fi
  kill "$beat" 2>/dev/null || true
  wait "$beat" 2>/dev/null || true
  echo "[$(now)]   done in $(( $(date +%s) - t0 )) s"
  return "$rc"
}
