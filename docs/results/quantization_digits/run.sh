#!/usr/bin/env bash
# Issue 24, measured: experiment=quantization_digits (the homework CNN, 5 seeds, each trained here on the CPU, then
# float / W8 / W8A8 / W8A8B32 / integer-only and the torch.ao cross-check), then its report. Run from the
# repository root with the virtual environment active:
#   bash docs/results/quantization_digits/run.sh [DIGITS_ROOT]      # default /tmp/digits, written if absent
set -euo pipefail
root=${1:-/tmp/digits}
here=docs/results/quantization_digits
[ -d "$root/cifar-10-batches-py" ] || hpml data digits --root "$root"
{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"; echo "commit: $(git rev-parse HEAD)"
  lscpu | grep -E '^(Model name|CPU\(s\)|Thread|Core|Socket)'; uptime
  python -c "import torch; print('torch', torch.__version__, 'quantized engines', torch.backends.quantized.supported_engines)"
} > "$here/machine.txt"
hpml launch experiment=quantization_digits workload.data_root="$root" sweep.root="$here"
sweep=$(realpath --relative-to=. "$(readlink -f "$here/latest")")
rm -f "$here/latest"
hpml report "$sweep" --out "$here/report"
