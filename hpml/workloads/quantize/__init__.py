"""The quantize workload: post-training quantization of a small CNN to 8-bit fixed point, stage by stage, checked
against torch.ao.quantization (docs/studies/quantization.md; entry point: __main__.py).

    fixed_point.py    ranges, scales, quantize / dequantize, range checks, bias scale, requantization (pure)
    plan.py           the model as a chain of layers (batch norm folded) and pooling
    calibration.py    the float activations over the calibration images; summaries and histograms
    quantized_net.py  per layer: int8 weights, scales, int32 bias, requantizer
    simulated.py      the float, W8, W8A8 and W8A8B32 stages (float32 with quantized values)
    integer_only.py   the integer-only inference (int32 accumulation, fixed-point requantization)
    torch_ao.py       the cross-check with PyTorch's eager-mode static quantization
    stages.py         running and timing the stages; what each stores
    data.py, float_model.py   the images; the float model trained here or loaded from a model.pt
"""
