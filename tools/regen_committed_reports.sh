#!/usr/bin/env bash
# Re-renders every committed docs/results report.md from its raw results with the current `hpml report`, and
# compares its numbers with the committed one (tools/compare_report_numbers.py). The raw results are
# extracted to the folder the report's title names (e.g. /tmp/hw5_h200.wz1AOa), so paths print as before.
#
#   bash tools/regen_committed_reports.sh            # compare only: new reports in /tmp/hpml-regen/<folder>/
#   UPDATE=1 bash tools/regen_committed_reports.sh   # and overwrite the committed report.md files
set -euo pipefail
cd "$(dirname "$0")/.."
status=0
for report in $(find docs/results -name report.md | sort); do
  folder=$(dirname "$report"); [ "$(basename "$folder")" = report ] && folder=$(dirname "$folder")
  sweeps=$(head -1 "$report" | sed 's/^# hpml scaling report: //')
  tarball=$(ls "$folder"/*.tar.gz 2>/dev/null | head -1 || true)
  if [ -n "$tarball" ]; then
    case "$sweeps" in /tmp/*/sweeps) ;; *) echo "== $report: title $sweeps is not /tmp/<folder>/sweeps; skipped"; continue;; esac
    rm -rf "$(dirname "$sweeps")" && mkdir -p "$(dirname "$sweeps")" && tar xzf "$tarball" -C "$(dirname "$sweeps")"
  elif [ -f "$folder/sweeps.tgz" ]; then  # the raw sweeps packed by tools/pack_sweeps.py
    sweeps=$(mktemp -d) && tar xzf "$folder/sweeps.tgz" -C "$sweeps"
  elif [ -f "$folder/sweeps/sweeps.tgz" ]; then
    sweeps=$(mktemp -d) && tar xzf "$folder/sweeps/sweeps.tgz" -C "$sweeps"
  elif [ -d "$folder/sweeps" ]; then
    sweeps="$folder/sweeps"
  else
    echo "== $report: no raw results kept; skipped"; continue
  fi
  out=/tmp/hpml-regen/${folder#docs/results/}
  mkdir -p "$out"
  python -m hpml.launcher.cli report "$sweeps" --out "$out" > /dev/null 2>"$out/stderr.txt"
  echo "== $report"
  python tools/compare_report_numbers.py "$report" "$out/report.md" | cut -c1-${WIDTH:-400} || status=1
  [ "${UPDATE:-0}" = 1 ] && cp "$out/report.md" "$report"
done
exit $status
