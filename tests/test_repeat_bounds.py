"""How often a workload repeats its work (iterations, repetitions, warm-ups, rounds, steps, epochs) has an upper
bound (contract/limits.py): before, nothing but the job's time limit ended a typo such as 1e9 iterations, with the
sweep written and the GPUs held. Every repeat count of every workload schema is bounded; the scan below keeps a new
one from being added without its bound."""

from __future__ import annotations

import dataclasses
import re

import pytest

from hpml.conf.schema import config_from_dict
from hpml.conf.workload import WORKLOAD_SCHEMAS
from hpml.contract.limits import MAX_EPOCHS, MAX_REPEATS
from hpml.launcher.errors import one_line

REPEATS = {
    "allreduce": ["warmup_iters", "iters"],
    "cuda_vecadd": ["repetitions", "one_thread_repetitions", "warmup"],
    "paleo": ["warmup_iters", "repetitions", "peak_repetitions", "peak_warmup"],
    "probe": ["products_per_round", "warmup", "reps"],
    "quantize": ["timing_warmup", "timing_repetitions"],
    "synthetic": ["num_warmup_batches", "num_batches_per_iter", "num_iters", "backward_passes_per_step",
                  "paired_rounds"],
    "train": ["comm_probe_steps", "profile_comm_steps", "overhead_check_steps", "overhead_check_rounds",
              "bound_probe_steps"],
}
EPOCHS = {"dataloader": ["epochs"], "quantize": ["epochs"], "train": ["epochs"]}
# integer fields whose names read like repeat counts but are not: what each is instead
NOT_REPEATS = {
    ("synthetic", "train_epochs"): "the epochs a cost estimate is priced for; nothing runs them",
    ("train", "lr_decay_epochs"): "when the linear decay ends; bounded by epochs' run",
    ("train", "warmup_epochs"): "a number < epochs",
    ("train", "eval_every"): "at most epochs",
}
REPEAT_NAME = re.compile(r"iters?$|repetitions$|reps$|warmup|rounds$|steps$|epochs$|num_batches|passes")


def cases():
    for table, cap in ((REPEATS, MAX_REPEATS), (EPOCHS, MAX_EPOCHS)):
        for preset, keys in table.items():
            for key in keys:
                yield pytest.param(preset, key, cap, id=f"{preset}.{key}")


@pytest.mark.parametrize("preset, key, cap", list(cases()))
def test_a_repeat_count_past_its_bound_is_one_line_and_the_bound_itself_is_allowed(compose_values, preset, key, cap):
    what = "epochs" if cap == MAX_EPOCHS else "a repeat count"
    with pytest.raises(Exception) as refused:
        config_from_dict(compose_values([f"experiment=tiny/{preset}", f"workload.{key}={cap + 1}"]))
    assert one_line(refused.value) == (f"workload.{key}={cap + 1} is not allowed: at most {cap:,} ({what}: more only "
                                       "runs until the job's time limit ends it)")
    config_from_dict(compose_values([f"experiment=tiny/{preset}", f"workload.{key}={cap}"]))


def test_every_integer_field_named_like_a_repeat_count_is_bounded_or_said_to_be_something_else():
    bounded = {(preset, key) for table in (REPEATS, EPOCHS) for preset, keys in table.items() for key in keys}
    unbounded = []
    for name, schema in WORKLOAD_SCHEMAS.items():
        for field in dataclasses.fields(schema):
            if field.type in ("int", int) and REPEAT_NAME.search(field.name) and (name, field.name) not in bounded \
                    and (name, field.name) not in NOT_REPEATS:
                unbounded.append(f"{name}.{field.name}")
    assert not unbounded, f"repeat counts without a bound in contract/limits.py: {unbounded}"
    assert bounded.isdisjoint(NOT_REPEATS)
