"""The held-out pass in a CUDA graph (workloads/train/graphed_eval.py) gives the eager pass's numbers: the same
top-1 and loss, after the weights changed in place between two evaluations (the graph reads them where they are),
with a last batch of another size run eagerly. Needs a GPU (run on the device machine)."""

from __future__ import annotations

import pytest
import torch

from hpml.workloads.common.distributed import DistContext
from hpml.workloads.train.evaluation import evaluate
from hpml.workloads.train.graphed_eval import EvalGraph

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")]


def test_graphed_evaluation_matches_the_eager_one_after_the_weights_change(compose_values):
    from hpml.conf.schema import config_from_dict
    from hpml.workloads.train.model import build_model

    cfg = config_from_dict(compose_values(["workload.model=resnet18", "workload.cifar_stem=true",
                                           "workload.precision=bf16", "workload.channels_last=true",
                                           "workload.num_classes=10"])).workload
    device = torch.device("cuda", 0)
    ctx = DistContext(rank=0, local_rank=0, world_size=1, device=device, backend="nccl")
    if not torch.distributed.is_initialized():  # evaluate all-reduces its totals: a one-rank group
        torch.distributed.init_process_group("gloo", init_method="tcp://127.0.0.1:29533", rank=0, world_size=1)
    torch.manual_seed(0)
    model = build_model(cfg, device)
    images = torch.randn(300, 3, 32, 32, device=device).contiguous(memory_format=torch.channels_last)
    labels = torch.randint(0, 10, (300,), device=device)
    held_out = [(images[i:i + 128], labels[i:i + 128]) for i in range(0, 300, 128)]  # 128, 128 and 44
    graph = EvalGraph(128, cfg, device)
    for _ in range(2):
        eager = evaluate(model, held_out, cfg, ctx)
        graphed = evaluate(model, held_out, cfg, ctx, graph)
        assert graphed[0] == eager[0] and graphed[1] == pytest.approx(eager[1], rel=1e-3)
        with torch.no_grad():  # what a training step does: the weights updated in place
            for p in model.parameters():
                p.mul_(0.9).add_(0.01)
    assert graph.graph is not None
