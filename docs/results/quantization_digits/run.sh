#!/usr/bin/env bash
# Issue 24, measured: experiment=quantization_digits (the homework CNN, 5 seeds, each trained here on the CPU, then
# float / W8 / W8A8 / W8A8B32 / integer-only and the torch.ao cross-check), then its report. Run from the
# repository root with the virtual environment active:
#   bash docs/results/quantization_digits/run.sh [DIGITS_ROOT] [OUT_DIR]   # default /tmp/digits, written if absent
# Issue 31: machine.txt records the CPU's SIMD flags and which torch.ao engines compute full-range int8 sums exactly
# on it (the cross-check's engine depends on it). To measure what an AVX2-only CPU computes on a VNNI one, cap the
# kernels: FBGEMM_ENABLE_INSTRUCTIONS=AVX2 ONEDNN_MAX_CPU_ISA=AVX2 ATEN_CPU_CAPABILITY=avx2 bash ... /tmp/digits DIR
set -euo pipefail
root=${1:-/tmp/digits}
here=${2:-docs/results/quantization_digits}
mkdir -p "$here"
[ -d "$root/cifar-10-batches-py" ] || hpml data digits --root "$root"
{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"; echo "commit: $(git rev-parse HEAD)"
  lscpu | grep -E '^(Model name|CPU\(s\)|Thread|Core|Socket)'; uptime
  echo "SIMD flags: $(grep -m1 -o -w -E 'avx2|fma|avx512f|avx512bw|avx512vl|avx512_vnni|avx_vnni|avx512_bf16|amx_int8' /proc/cpuinfo | tr '\n' ' ')"
  env | grep -E '^(ATEN_CPU_CAPABILITY|FBGEMM_ENABLE_INSTRUCTIONS|ONEDNN_MAX_CPU_ISA)=' || true
  python -c "import torch; print('torch', torch.__version__, 'CPU capability', torch.backends.cpu.get_cpu_capability(), 'quantized engines', torch.backends.quantized.supported_engines)"
  python -c "from hpml.workloads.quantize import torch_ao; b = torch_ao.engine_block('auto'); print('exact int8 engines', b['engines_exact']); print('chosen', b['engine'], '-', b['engine_reason'])"
} > "$here/machine.txt"
hpml launch experiment=quantization_digits workload.data_root="$root" sweep.root="$here"
sweep=$(realpath --relative-to=. "$(readlink -f "$here/latest")")
rm -f "$here/latest"
hpml report "$sweep" --out "$here/report"
