"""launcher.errors.one_line: whatever layer raised a config error, the user reads one line that names the
key. Real exceptions from OmegaConf, Hydra's own exception type and hpml's check, in and out of chains."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
from hydra.errors import MissingConfigException
from omegaconf import OmegaConf

from conf.validation import ConfigValueError
from launcher.errors import one_line


@dataclass
class Sweep:
    name: str = "demo"
    wait: bool = True


@dataclass
class Top:
    sweep: Sweep = field(default_factory=Sweep)


def raised(function) -> BaseException:
    with pytest.raises(Exception) as caught:
        function()
    return caught.value


def wrapped(error: BaseException) -> BaseException:
    """error as the cause of another, as Hydra wraps what a config check raised."""
    def outer():
        try:
            raise error
        except BaseException as inner:
            raise RuntimeError("Error in call to target 'x':\nsomething long") from inner
    return raised(outer)


def test_an_unknown_key_lists_the_allowed_ones():
    error = raised(lambda: OmegaConf.merge(OmegaConf.structured(Top), {"sweep": {"nope": 1}}))
    assert one_line(error) == "unknown key 'sweep.nope'; allowed keys: name, wait"
    assert one_line(wrapped(error)) == "unknown key 'sweep.nope'; allowed keys: name, wait"


def test_a_wrong_type_names_the_key_and_the_first_line_of_the_message():
    error = raised(lambda: OmegaConf.merge(OmegaConf.structured(Top), {"sweep": {"wait": "maybe"}}))
    assert one_line(error) == "sweep.wait: Value 'maybe' is not a valid bool (type str)"


def test_hpmls_own_check_is_shown_as_written_even_inside_a_chain():
    message = "workload.lr=-1.0 is not allowed: > 0"
    assert one_line(ConfigValueError(message)) == message
    assert one_line(wrapped(ConfigValueError(message))) == message


def test_a_missing_config_names_its_key_and_lists_the_options():
    error = MissingConfigException("In 'config': Could not find 'workload/nope'", "workload/nope",
                                   ["allreduce", "synthetic", "train"])
    assert one_line(error) == ("no config 'workload/nope'; available options: allreduce, synthetic, train "
                               "(set workload=<option>)")
    nested = MissingConfigException("In 'config': Could not find 'experiment/tiny/nope'", "experiment/tiny/nope",
                                    ["quickstart", "tiny/train"])
    assert one_line(nested) == ("no config 'experiment/tiny/nope'; available options: quickstart, tiny/train "
                                "(set experiment=<option>)")


def test_the_schemas_are_no_options_of_their_groups(compose_values):
    """launcher/config_store.py stores them at the root: Hydra neither lists nor accepts them as group options."""
    from hydra.core.config_store import ConfigStore

    repo = ConfigStore.instance().repo
    assert not [name for group in ("cluster", "workload") for name in repo.get(group, {}) if "schema" in name]
    assert {"cluster_schema.yaml", "train_schema.yaml", "hpml_schema.yaml"} <= set(repo)


def test_other_messages_are_squashed_to_one_line():
    error = ValueError("Error merging override x\n  Key 'a' is not in struct\n\tfull_key: a\n")
    assert one_line(error) == "Error merging override x; Key 'a' is not in struct; full_key: a"
    assert one_line(ValueError("Could not load 'x'.\nSee above.")) == "Could not load 'x'. See above."
    assert one_line(ValueError("plain")) == "plain"


def test_a_cyclic_chain_ends():
    a, b = ValueError("first"), ValueError("second")
    a.__context__, b.__context__ = b, a
    assert one_line(a) == "first"
