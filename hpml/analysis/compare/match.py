"""Which results of two sides measure the same work, and what differs between the sides.

A result's match key is its resolved config, flattened, without what says where or how often it ran rather than
what it measured: sweep.* (names, folders, repeat, seed), cluster.* (where it was submitted), and paths
(workload.data_root, workload.model_path; the same data under /scratch on one cluster and /home on another is the
same work), and the price (workload.price_name, workload.gpu_hour_usd: what an hour costs is no part of the work, and
comparing the cost to target at two prices is a question compare answers). Everything else, resources.* included
(1 GPU is compared with 1 GPU), is part of it. --ignore KEY drops more keys (e.g. a setting the candidate changed on
purpose), --by KEY keeps one that is otherwise dropped (e.g. sweep.seed, to pair seeds).

A side's label is what really differs between the sides, read from the results' provenance (environment): GPU
model, host, hpml commit and dirty flag, torch, CUDA, NCCL and driver versions, SLURM partition.
"""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Sequence, Tuple

from hpml.analysis.configuration import NOT_CONFIGURATION_KEYS, flatten

DROPPED_PREFIXES = ("sweep.", "cluster.")
DROPPED_KEYS = (*NOT_CONFIGURATION_KEYS, "workload.model_path", "workload.name", "workload.price_name",
                "workload.gpu_hour_usd")


_KEPT: Dict[Tuple[str, Tuple[str, ...], Tuple[str, ...]], bool] = {}  # (key, ignore, by) -> kept: keys repeat


def _kept(key: str, ignore: Tuple[str, ...], by: Tuple[str, ...]) -> bool:
    found = _KEPT.get((key, ignore, by))
    if found is None:
        found = key in by or not (key.startswith(DROPPED_PREFIXES) or key in DROPPED_KEYS or key in ignore
                                  or any(key.startswith(prefix + ".") for prefix in ignore))
        _KEPT[(key, ignore, by)] = found
    return found


def match_items(config: Mapping[str, Any], ignore: Sequence[str] = (), by: Sequence[str] = ()) -> Dict[str, Any]:
    ignore, by = tuple(ignore), tuple(by)
    groups = {g: tree for g, tree in config.items()
              if g not in ("sweep", "cluster") or any(k.startswith(g + ".") for k in by)}
    return {key: value for key, value in sorted(flatten(groups).items()) if _kept(key, ignore, by)}


def match_key(items: Mapping[str, Any]) -> str:
    return "; ".join(f"{key}={value}" for key, value in items.items())


def known_keys(docs: Sequence[Mapping[str, Any]]) -> set:
    keys = set()
    for doc in docs:
        keys.update(flatten(doc["config"]))
    return keys


def provenance(doc: Mapping[str, Any]) -> Dict[str, str]:
    """What says where and with which software a result ran, as short texts."""
    env = doc.get("environment") or {}
    hpml = env.get("hpml") or {}
    commit = hpml.get("git_commit")
    return {
        "GPU": ", ".join(sorted(set(env.get("gpus") or []))) or "CPU",
        "host": ", ".join(env.get("hosts") or []) or "?",
        "hpml": f"{commit[:10]}{'+dirty' if hpml.get('git_dirty') else ''}" if commit else "?",
        "torch": str(env.get("torch")), "CUDA": str(env.get("cuda")), "NCCL": str(env.get("nccl")),
        "driver": str(env.get("gpu_driver")),
        "partition": str((env.get("env") or {}).get("SLURM_JOB_PARTITION")),
    }


def side_labels(sides: Sequence[Sequence[Mapping[str, Any]]]) -> Tuple[List[str], List[str]]:
    """(a label per side, the provenance fields that differ): each side's values of the fields whose values differ
    between sides ('a | b' where one side itself mixes them)."""
    values = [{} for _ in sides]
    for index, docs in enumerate(sides):
        for doc in docs:
            for field, text in provenance(doc).items():
                values[index].setdefault(field, set()).add(text)
    fields = [field for field in values[0] if len({frozenset(v.get(field, ())) for v in values}) > 1]
    labels = [", ".join(f"{field} {' | '.join(sorted(v[field]))}" for field in fields) for v in values]
    return labels, fields
