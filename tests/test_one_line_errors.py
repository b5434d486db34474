"""hpml.launcher.errors.one_line: whatever layer raised a config error, the user reads one line that names the
key. Real exceptions from OmegaConf, Hydra's own exception type and hpml's check, in and out of chains."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
from hydra.errors import MissingConfigException
from omegaconf import OmegaConf

from hpml.conf.validation import ConfigValueError
from hpml.launcher.errors import one_line


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


# Every grammar error class of an override (issue 25, item 2), through Hydra's real parser as `hpml launch`
# runs it (launcher.launch.plan_sweep, in process): the line names the override, its key and what is wrong.
# (override, the key the line names, what the line must say about it)
GRAMMAR_ERRORS = [
    ("workload.batch_size=range(1", "workload.batch_size", "'(' at column 26 is never closed"),
    ("workload.batch_size=[1,2", "workload.batch_size", "'[' at column 21 is never closed"),
    ("workload.batch_size={a:1", "workload.batch_size", "'{' at column 21 is never closed"),
    ("workload.batch_size=[1,2)", "workload.batch_size", "'[' at column 21 is closed by ')' at column 25"),
    ("workload.batch_size=1)", "workload.batch_size", "')' at column 22 closes nothing"),
    ("workload.lr=${", "workload.lr", "'{' at column 14 is never closed"),
    ("workload.model='resnet18", "workload.model", "the quote ' at column 16 is never closed"),
    ('workload.model="resnet18', "workload.model", 'the quote " at column 16 is never closed'),
    ("work load.lr=1", "work load.lr", "unexpected character ' ' at column 5"),
    ("workload.batch_size", "workload.batch_size", "no '=': write key=value"),
    ("workload.lr=1,,2", "workload.lr", "extraneous input ','"),
    ("workload.lr=foo(1)", "workload.lr", "Unknown function 'foo'"),
    ("workload.batch_size=range(1,x)", "workload.batch_size", "while evaluating 'range(1,x)'"),
    ("workload.batch_size=range()", "workload.batch_size", "missing a required argument: 'start'"),
    ("workload.batch_size=choice()", "workload.batch_size", "empty choice is not legal"),
    ("workload.lr=sort(1,2,reverse=)", "workload.lr", "no viable alternative at input 'sort(1,2,reverse=)'"),
]


def launch_refusal(*args: str) -> str:
    from hpml.launcher.errors import LaunchError
    from hpml.launcher.launch import checked_arguments, plan_sweep

    with pytest.raises(LaunchError) as refused:
        plan_sweep(checked_arguments(["-m", "resources.workers_per_node=1,2", *args]))
    return str(refused.value)


@pytest.mark.parametrize("override, key, says", GRAMMAR_ERRORS, ids=[case[0] for case in GRAMMAR_ERRORS])
def test_a_grammar_error_names_the_override_and_its_key(override, key, says):
    line = launch_refusal(override)
    assert line.startswith(f"override {override!r} (key {key}) does not parse: "), line
    assert says in line and "\n" not in line, line
    assert line.endswith("(override grammar: https://hydra.cc/docs/1.2/advanced/override_grammar/basic)")


@pytest.mark.parametrize("override", ["=3", "+=1", "++=x", "~", "~=1"])
def test_an_override_without_a_key_is_refused_before_hydra(override):
    assert launch_refusal(override) == f"override {override!r} names no key: write key=value " \
                                       f"(e.g. workload.batch_size=64)"


def test_a_sweep_function_for_sampling_sweepers_names_its_override():
    assert launch_refusal("workload.lr=interval(0.1,1)") == (
        "workload.lr=interval(0.1,1) is not allowed: interval() is for sweepers that sample; give values, "
        "range() or choice() (e.g. workload.lr=1,2,4)")


def test_the_issues_command_prints_one_line_naming_the_override(tmp_path):
    from tests.conftest import run_hpml

    done = run_hpml(["launch", "-m", "workload.batch_size=16,32", "workload.batch_size=range(1"], cwd=tmp_path)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.splitlines() == [
        "hpml: error: override 'workload.batch_size=range(1' (key workload.batch_size) does not parse: '(' at "
        "column 26 is never closed; no viable alternative at input 'range(1' (override grammar: "
        "https://hydra.cc/docs/1.2/advanced/override_grammar/basic)"]
    assert not (tmp_path / "sweeps").exists()
