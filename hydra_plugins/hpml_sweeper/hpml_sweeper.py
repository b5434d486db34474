"""A Hydra sweeper that plans sweep points instead of running them, fast enough for 1,000-point sweeps.

It expands the command line exactly like Hydra's BasicSweeper (cartesian product, range(), choice lists),
but composes the config once per distinct combination of config-group overrides, then builds each point
from that: plain `key=value` overrides are checked and converted by the typed config (once per distinct
value) and set into the resolved values; when an interpolation reads an overridden key, the point is
resolved from a copy instead, as Hydra would. Composing every point (what BasicSweeper does, twice)
costs about 0.13 s a point; this costs well under a millisecond. Each point is handed to the active
launcher.planner.Plan; nothing runs here.
"""

# no `from __future__ import annotations`: Hydra execs plugin modules outside sys.modules,
# where dataclasses cannot resolve string annotations.

import copy
import decimal
import hashlib
import json
import math
import re
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any, Dict, List, Optional, Set, Tuple

from hydra._internal.config_loader_impl import ConfigLoaderImpl
from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
from hydra.core.config_store import ConfigStore
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.core.override_parser.types import ChoiceSweep, Override, OverrideType, RangeSweep, ValueType
from omegaconf import BooleanNode, DictConfig, ListConfig, OmegaConf, open_dict


@dataclass
class HpmlSweeperConf:
    _target_: str = "hydra_plugins.hpml_sweeper.hpml_sweeper.HpmlSweeper"
    max_batch_size: Optional[int] = None
    params: Optional[Dict[str, str]] = None


ConfigStore.instance().store(group="hydra/sweeper", name="hpml", node=HpmlSweeperConf, provider="hpml")


INTERPOLATION = re.compile(r"\$\{([^}]*)\}")
SIMPLE_REFERENCE = re.compile(r"[A-Za-z_][\w.]*")  # ${a.b.c}
RESOLVER_CALL = re.compile(r"\w+:[^${}]*")  # ${now:%Y-%m-%d}: a resolver with literal arguments


@dataclass
class ComposedBase:
    """One composition (per combination of group overrides), resolved once."""

    config: DictConfig  # typed: checks and converts override values
    resolved: Dict[str, Any]  # plain values, interpolations resolved
    referenced: Optional[Set[str]]  # keys that interpolations read; None: could not tell (always compose)


def referenced_keys(unresolved: Any) -> Optional[Set[str]]:
    """Keys read by the config's interpolations, or None if one is not a plain ${a.b} or ${resolver:args}."""
    keys: Set[str] = set()
    stack = [unresolved]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
        elif isinstance(node, str):
            for inner in INTERPOLATION.findall(node):
                if SIMPLE_REFERENCE.fullmatch(inner):
                    keys.add(inner)
                elif not RESOLVER_CALL.fullmatch(inner):
                    return None
    return keys


def overlaps(key: str, referenced: Set[str]) -> bool:
    return any(key == r or key.startswith(r + ".") or r.startswith(key + ".") for r in referenced)


def set_path(values: Dict[str, Any], key: str, value: Any) -> None:
    *parents, leaf = key.split(".")
    for part in parents:
        values = values[part]
    values[leaf] = value


def is_true_false_key(cfg: DictConfig, key: str) -> bool:
    """The typed config holds a bool at `key` (an Optional[bool] set to null too: its node is a BooleanNode)."""
    parent_key, _, last = key.rpartition(".")
    parent = OmegaConf.select(cfg, parent_key, default=None) if parent_key else cfg
    if not isinstance(parent, DictConfig):
        return False
    node = parent._get_node(last, throw_on_missing_key=False)  # noqa: SLF001 - the node says its type
    return isinstance(node, BooleanNode) or isinstance(OmegaConf.select(cfg, key, default=None), bool)


# The most points one launch may plan (docs/decisions.md): 10 times the largest sweep measured (1,000 points,
# docs/results/slurm-submit-1000.md), about 10 job arrays at SLURM's default MaxArraySize and as many as its
# default MaxJobCount; planned at about a millisecond a point, a --dry-run of 10,000 lists them in seconds.
MAX_POINTS = 10_000
REPEAT_HINT = "sweep.repeat=0,1,2 runs each point three times"


def final_overrides(overrides: List[Override]) -> List[Override]:
    """The override each key ends with, as BasicSweeper.split_arguments keeps them: a later one replaces an
    earlier (the command line replaces a preset's hydra.sweeper.params), in the place of the first."""
    final: Dict[str, Override] = {}
    for override in overrides:
        final[override.get_key_element()] = override
    return list(final.values())


def sweep_length(override: Override) -> int:
    """How many values an override gives (1 unless it sweeps), counted without listing them: range(0,10**9)
    is 10**9 values, a list of that length would take gigabytes."""
    from hpml.conf.validation import ConfigValueError

    if not override.is_sweep_override():
        return 1
    sweep = override.value()
    if isinstance(sweep, ChoiceSweep):
        return len(sweep.list)
    if isinstance(sweep, RangeSweep):
        start, stop, step = sweep.start, sweep.stop, sweep.step
        if step == 0:
            raise ConfigValueError(f"{override.input_line} is not allowed: a range's step must not be 0 "
                                   f"(e.g. {override.key_or_group}=range({start},{stop},1))")
        if all(isinstance(n, int) for n in (start, stop, step)):
            return len(range(start, stop, step))
        # Hydra's FloatRange steps in Decimal from start while short of stop
        count = (decimal.Decimal(stop) - decimal.Decimal(start)) / decimal.Decimal(step)
        return max(0, math.ceil(count))
    return sum(1 for _ in override.sweep_iterator())  # glob(): the group's options that match


def check_sweep_size(overrides: List[Override]) -> None:
    """Refuses, before a point is listed, a sweep of no points (range(0), which would otherwise end silently
    as if it had succeeded) or of more than MAX_POINTS (range(0,10**9) filled gigabytes before any check)."""
    from hpml.conf.validation import ConfigValueError

    swept = [(override, sweep_length(override)) for override in overrides if override.is_sweep_override()]
    for override, length in swept:
        if length == 0:
            raise ConfigValueError(f"{override.input_line} is not allowed: a sweep needs at least one value "
                                   f"(e.g. {override.key_or_group}=range(0,4))")
    count = math.prod(length for _, length in swept)
    if count > MAX_POINTS:
        given = " ".join(override.input_line for override, _ in swept)
        factors = "" if len(swept) == 1 else f" ({' x '.join(f'{length:,}' for _, length in swept)})"
        raise ConfigValueError(f"{given} is not allowed: it would make {count:,} points{factors}, at most "
                               f"{MAX_POINTS:,} in one launch; split the sweep over several launches")


def refuse_repeated_values(overrides: List[Override], preset_lines: Set[str]) -> None:
    """A value given twice in one sweep list (seed=0,0) makes two identical points."""
    from hpml.conf.validation import ConfigValueError

    for override in overrides:
        if not isinstance(override.value(), ChoiceSweep):
            continue  # range() never repeats a value; glob() lists each option once
        seen: Set[str] = set()
        for value in override.sweep_string_iterator():
            if value in seen:
                where = " (the preset's hydra.sweeper.params)" if override.input_line in preset_lines else ""
                raise ConfigValueError(f"{override.input_line}{where} is not allowed: the value {value} is given "
                                       f"twice, which makes identical points; give each value once ({REPEAT_HINT})")
            seen.add(value)


def refuse_identical_points(overrides: List[Override], first: Tuple[int, List[str]],
                            second: Tuple[int, List[str]]) -> None:
    """Two points whose configs are equal although their values are written differently (seed=0,00;
    lr=1,1.0; flag=true,1; two options of a group that compose alike)."""
    from hpml.conf.validation import ConfigValueError

    (a, a_overrides), (b, b_overrides) = first, second
    differing = [(x, y) for x, y in zip(a_overrides, b_overrides) if x != y]  # both in the sweep's key order
    keys = [x.partition("=")[0] for x, _ in differing]
    lines = " ".join(o.input_line for o in overrides if o.get_key_element() in keys) or " ".join(a_overrides)
    same = " and ".join(" ".join(side) for side in zip(*differing)) if differing else "their values"
    raise ConfigValueError(f"{lines} is not allowed: {same} make the same config, so points {a} and {b} would be "
                           f"identical; give each value once ({REPEAT_HINT})")


def refuse_sampled_sweeps(overrides: List[Override]) -> None:
    """interval() only means something to a sweeper that samples (Optuna, Ax); BasicSweeper's own refusal
    names neither the override nor its key."""
    from hpml.conf.validation import ConfigValueError

    for override in overrides:
        if override.value_type == ValueType.INTERVAL_SWEEP:
            raise ConfigValueError(f"{override.input_line} is not allowed: interval() is for sweepers that sample; "
                                   f"give values, range() or choice() (e.g. {override.key_or_group}=1,2,4)")


class HpmlSweeper(BasicSweeper):
    def setup(self, *, hydra_context, task_function, config: DictConfig) -> None:
        self.hydra_context, self.config = hydra_context, config  # no launcher: points are only planned

    def _is_group(self, key: str) -> bool:
        if key not in self._group_cache:
            self._group_cache[key] = bool(self.hydra_context.config_loader.get_group_options(key))
        return self._group_cache[key]

    def _is_plain_value(self, override: Override) -> bool:
        """A `key=value` on an existing key: safe to apply after composition."""
        key = override.key_or_group
        return (override.type == OverrideType.CHANGE and override.package is None
                and not key.startswith("hydra") and "/" not in key and not self._is_group(key))

    def _compose(self, group_overrides: Tuple[str, ...]) -> ComposedBase:
        if group_overrides not in self._composed:
            cfg = self.hydra_context.config_loader.load_sweep_config(self.config, list(group_overrides))
            with open_dict(cfg):
                del cfg["hydra"]
            self._composed[group_overrides] = ComposedBase(
                config=cfg, resolved=OmegaConf.to_container(cfg, resolve=True, enum_to_str=True),
                referenced=referenced_keys(OmegaConf.to_container(cfg, resolve=False)))
        return self._composed[group_overrides]

    def _converted(self, base: ComposedBase, override: Override) -> Any:
        """The value as the typed config stores it (validated: a bad value raises here)."""
        cache_key = (id(base), override.input_line)
        if cache_key not in self._values:
            if id(base) not in self._scratch:
                self._scratch[id(base)] = copy.deepcopy(base.config)
            scratch = self._scratch[id(base)]
            ConfigLoaderImpl._apply_overrides_to_config([override], scratch)
            value = OmegaConf.select(scratch, override.key_or_group)
            if isinstance(value, (DictConfig, ListConfig)):
                value = OmegaConf.to_container(value, resolve=True, enum_to_str=True)
            self._values[cache_key] = value.name if isinstance(value, Enum) else value
        return self._values[cache_key]

    def _check_true_false(self, base: ComposedBase, override: Override) -> None:
        """A key whose value is true or false takes true or false (or 1 or 0): OmegaConf would turn any other
        number into true, so `workload.augment=5` or `workload.pin_memory=2` would run as if the user meant it."""
        cache_key = (id(base), override.input_line)
        if cache_key in self._checked:
            return
        key = override.key_or_group
        if is_true_false_key(base.config, key):
            value = override.value()
            allowed = isinstance(value, bool) or (type(value) is int and value in (0, 1)) or (
                isinstance(value, str) and value.lower() in ("true", "false"))
            if not allowed:
                from hpml.conf.validation import ConfigValueError, shown

                raise ConfigValueError(f"{key}={shown(value)} is not allowed: true or false")
        self._checked.add(cache_key)

    def point_config(self, point_overrides: List[str]) -> Dict[str, Any]:
        parsed = [self._parse(line) for line in point_overrides]
        slow = tuple(o.input_line for o in parsed if not self._is_plain_value(o))
        fast = [o for o in parsed if self._is_plain_value(o)]
        base = self._compose(slow)
        for override in fast:
            self._check_true_false(base, override)
        if base.referenced is not None and not any(
                overlaps(o.key_or_group, base.referenced) or "${" in o.input_line for o in fast):
            # No interpolation reads an overridden key: the resolved base plus the new values is exact.
            values = copy.deepcopy(base.resolved)
            for override in fast:
                set_path(values, override.key_or_group, self._converted(base, override))
            return values
        cfg = copy.deepcopy(base.config)
        ConfigLoaderImpl._apply_overrides_to_config(fast, cfg)  # type-checks each value
        return OmegaConf.to_container(cfg, resolve=True, enum_to_str=True)

    def _parse(self, line: str) -> Override:
        if line not in self._parsed:
            self._parsed[line] = self._parser.parse_overrides([line])[0]
        return self._parsed[line]

    def sweep(self, arguments: List[str]) -> Any:
        from hpml.launcher.planner import active_plan

        self._parser = OverridesParser.create(config_loader=self.hydra_context.config_loader)
        self._group_cache: Dict[str, bool] = {}
        self._composed: Dict[Tuple[str, ...], ComposedBase] = {}
        self._scratch: Dict[int, DictConfig] = {}
        self._values: Dict[Tuple[int, str], Any] = {}
        self._checked: Set[Tuple[int, str]] = set()
        self._parsed: Dict[str, Override] = {}
        preset_lines = self._parse_config()
        overrides = final_overrides(self._parser.parse_overrides(preset_lines + list(arguments)))
        refuse_sampled_sweeps(overrides)
        check_sweep_size(overrides)  # before the points are listed
        refuse_repeated_values(overrides, set(preset_lines))
        points = [p for batch in self.split_arguments(overrides, None) for p in batch]
        sweep_dir = Path(str(self.config.hydra.sweep.dir)).resolve()
        plan = active_plan()
        seen: Dict[bytes, int] = {}  # a digest of each point's config -> its number
        for number, point_overrides in enumerate(points):
            values = self.point_config(point_overrides)
            plan.add(values, point=number, sweep_dir=sweep_dir, overrides=point_overrides)
            config = hashlib.blake2b(json.dumps(values, sort_keys=True, default=str).encode()).digest()
            if config in seen:
                refuse_identical_points(overrides, (seen[config], points[seen[config]]), (number, point_overrides))
            seen[config] = number
        return []
