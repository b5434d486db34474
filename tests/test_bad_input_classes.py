"""Bad input by class, each checked in one place for every key it can reach (docs/decisions.md, "Bad input by
class"): the items of every list field, every text of the config, every workload's input batch, every bound of
the cluster's numbers, and the flags of `hpml launch`. Each refusal is one line naming the key, before anything
is written."""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import io
import typing
from typing import Any, Dict, Iterator, List, Tuple

import pytest

from hpml.conf.resources import MAX_GPUS_PER_NODE, MAX_MEM_GB
from hpml.conf.schema import MAX_PARALLEL, MAX_SEED, HpmlConfig, config_from_dict
from hpml.conf.workload import WORKLOAD_SCHEMAS
from hpml.contract.limits import MAX_BUFFER_BYTES
from hpml.launcher.cli import main
from hpml.launcher.errors import one_line

TINY = {name: f"experiment=tiny/{name}" for name in WORKLOAD_SCHEMAS}


def leaf_fields(schema: type, prefix: str) -> Iterator[Tuple[str, Any]]:
    """(dotted key, type hint) of every field under a schema, nested dataclasses walked."""
    hints = typing.get_type_hints(schema)
    for field in dataclasses.fields(schema):
        hint = hints[field.name]
        if isinstance(hint, type) and dataclasses.is_dataclass(hint):
            yield from leaf_fields(hint, f"{prefix}{field.name}.")
        else:
            yield f"{prefix}{field.name}", hint


def keys_of_every_schema() -> Iterator[Tuple[str, str, Any]]:
    """(workload, key, hint): the base tree's keys once (under the allreduce preset), every workload's keys."""
    for key, hint in leaf_fields(HpmlConfig, ""):
        if key != "workload":
            yield "allreduce", key, hint
    for name, schema in WORKLOAD_SCHEMAS.items():
        for key, hint in leaf_fields(schema, "workload."):
            yield name, key, hint


def without_none(hint: Any) -> Any:
    args = [a for a in typing.get_args(hint) if a is not type(None)]
    return args[0] if typing.get_origin(hint) is typing.Union and len(args) == 1 else hint


def set_key(values: Dict, key: str, value: Any) -> Dict:
    values = copy.deepcopy(values)
    *parents, leaf = key.split(".")
    node = values
    for part in parents:
        node = node[part]
    node[leaf] = value
    return values


def refused(values: Dict) -> str:
    with pytest.raises(Exception) as error:
        config_from_dict(values)
    return one_line(error.value)


LIST_KEYS = [(w, k, typing.get_args(h)[0]) for w, k, h in keys_of_every_schema()
             if typing.get_origin(without_none(h)) is list]
# workload.name picks the schema (refused as "one of" the registry's names, whatever it holds)
TEXT_KEYS = [(w, k) for w, k, h in keys_of_every_schema()
             if (without_none(h) is str or typing.get_args(without_none(h)) == (str,)) and k != "workload.name"]


def test_the_scans_find_the_keys_they_are_about():
    assert {k for _, k, _ in LIST_KEYS} >= {"cluster.setup", "cluster.srun_args", "workload.matmul_dtypes",
                                            "workload.lr_milestones"}
    assert {k for _, k in TEXT_KEYS} >= {"sweep.root", "sweep.dir", "cluster.partition", "workload.data_root",
                                         "workload.model", "workload.link"}


@pytest.mark.parametrize("workload, key, item_type", LIST_KEYS, ids=[f"{w}:{k}" for w, k, _ in LIST_KEYS])
@pytest.mark.parametrize("item", [["a"], {"a": 1}], ids=["list", "mapping"])
def test_every_list_field_refuses_an_item_of_another_type(compose_values, workload, key, item_type, item):
    values = set_key(compose_values([TINY[workload]]), key, [item])
    assert refused(values) == (f"{key}=[{item!r}] is not allowed: a list of {item_type.__name__} values "
                               f"(item 0 is {item!r})")


@pytest.mark.parametrize("workload, key", TEXT_KEYS, ids=[f"{w}:{k}" for w, k in TEXT_KEYS])
@pytest.mark.parametrize("character", ["\t", "\n", "\x1b", "\x00", "\x7f"],
                         ids=["tab", "newline", "esc", "nul", "del"])
def test_every_text_refuses_control_characters(compose_values, workload, key, character):
    values = compose_values([TINY[workload]])
    is_list = isinstance(dict(leaf_items(values))[key], list)
    text = f"a{character}b"
    line = refused(set_key(values, key, [text] if is_list else text))
    assert line.startswith(f"{key}=") and line.endswith(
        "is not allowed: one line of text without control characters (line break, tab, NUL, ESC)"), line


def leaf_items(values: Dict, prefix: str = "") -> Iterator[Tuple[str, Any]]:
    for name, value in values.items():
        if isinstance(value, dict) and name != "sbatch_extra":
            yield from leaf_items(value, f"{prefix}{name}.")
        else:
            yield f"{prefix}{name}", value


def test_unicode_that_prints_stays_allowed(compose_values):
    values = compose_values([TINY["allreduce"]])
    config_from_dict(set_key(values, "sweep.root", "/tmp/résultats 🙂"))
    config_from_dict(set_key(values, "cluster.setup", ["module load cuda/12 # é"]))


@pytest.mark.parametrize("key, value, allowed", [
    ("sweep.root", "", "a folder path (give . for the current directory)"),
    ("sweep.dir", "", "a folder path (give . for the current directory)"),
    *[(f"cluster.{k}", "", "a name, or null for the cluster's default") for k in ("partition", "account", "qos",
                                                                                  "constraint")],
    ("resources.mem_gb", MAX_MEM_GB + 1, f"an integer from 0 (the cluster's default) to {MAX_MEM_GB} (GB per node; "
                                         "no machine has more)"),
    ("cluster.max_parallel", MAX_PARALLEL + 1, f"an integer from 0 (no cap) to {MAX_PARALLEL:,} (the most points a "
                                               "launch plans)"),
    ("cluster.assume_gpus", MAX_GPUS_PER_NODE + 1, f"null (count this machine's GPUs) or an integer from 0 to "
                                                   f"{MAX_GPUS_PER_NODE}"),
    # torch's generators take seeds up to 2**64 - 1 and workers add the rank or the epoch; numpy's 2**32 - 1
    *[("sweep.seed", seed, f"an integer from 0 to {MAX_SEED:,} (2**32 - 1)") for seed in (-1, MAX_SEED + 1, 2 ** 40)],
])
def test_empty_names_and_numbers_past_any_machine_are_refused(compose_values, key, value, allowed):
    assert refused(set_key(compose_values([TINY["allreduce"]]), key, value)) == \
        f"{key}={value!r} is not allowed: {allowed}"


BATCH_AND_IMAGE = [name for name, schema in WORKLOAD_SCHEMAS.items()
                   if {"batch_size", "image_size"} <= {f.name for f in dataclasses.fields(schema)}]


@pytest.mark.parametrize("workload", BATCH_AND_IMAGE)
def test_every_workload_with_a_batch_of_images_bounds_its_input_batch(compose_values, workload):
    assert "train" in BATCH_AND_IMAGE
    side = 2 ** 31  # train once passed this to torch, whose meta tensor overflowed: a traceback
    values = set_key(compose_values([TINY[workload]]), "workload.image_size", side)
    if workload == "dataloader":  # its tiny preset reads CIFAR-10, whose side is 32
        values = set_key(values, "workload.dataset", "image_folder")
    line = refused(values)
    assert line.startswith("workload.batch_size x 3 x workload.image_size^2 x 4 bytes=") and \
        f"at most {MAX_BUFFER_BYTES >> 30} GiB, one float32 input batch" in line, line


def launch_in_process(args: List[str]) -> Tuple[int, List[str]]:
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = main(["launch", *args])
    return code, err.getvalue().strip().splitlines()


@pytest.mark.parametrize("args, said", [
    (["--zzz"], "hpml launch: unrecognized arguments: --zzz"),
    (["-x=1"], "hpml launch: unrecognized arguments: -x=1"),
    (["-c"], "hpml launch: argument --cfg/-c: expected one argument"),
    (["--cfg", "zzz"], "hpml launch: argument --cfg/-c: invalid choice: 'zzz'"),
    (["--run"], "hpml launch: --run is not allowed"),
    (["--config-name", "x"], "hpml launch: --config-name is not allowed"),
    (["--config-path", "/tmp"], "hpml launch: --config-path is not allowed"),
    (["--experimental-rerun", "/tmp/x.pickle"], "hpml launch: --experimental-rerun is not allowed"),
])
def test_a_bad_launch_flag_is_one_line_before_hydra_runs(tmp_path, args, said):
    code, lines = launch_in_process([f"sweep.root={tmp_path}", "--dry-run", *args])
    assert code == 2 and len(lines) == 1 and lines[0].startswith(f"hpml: error: {said}"), lines
    assert list(tmp_path.iterdir()) == []
