"""The preflight's model check (one meta-device forward) is kept on disk, so that a later launch needs no torch:
written only by a launch or dry run that passed its checks, read back equal, keyed by the code it depends on."""

from __future__ import annotations

import importlib.metadata
import json
import subprocess
import sys

from tests.conftest import run_hpml

READ_BACK = """
import json, sys
from hpml.conf.model_input import meta_forward
answer = meta_forward("hpml_cnn", 28, 10, False, 1)
print(json.dumps({"answer": answer.__dict__, "torch_imported": "torch" in sys.modules}))
"""


def read_back(cache) -> dict:
    done = subprocess.run([sys.executable, "-c", READ_BACK], capture_output=True, text=True, timeout=300,
                          env={"HPML_CACHE_DIR": str(cache), "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_a_refused_launch_writes_no_cache_and_a_launch_or_dry_run_that_passed_does(tmp_path):
    cache = tmp_path / "cache"
    work = tmp_path / "work"
    work.mkdir()
    base = ["experiment=tiny/train", "workload.model=hpml_cnn", "workload.dataset=synthetic"]
    env = {"HPML_CACHE_DIR": str(cache)}
    refused = run_hpml(["launch", *base, "resources.nodes=2"], cwd=work, env=env)
    assert refused.returncode == 2, refused.stderr
    assert not (cache / "meta_forward").exists()  # refused: nothing written anywhere
    dry = run_hpml(["launch", *base, "--dry-run"], cwd=work, env=env)
    assert dry.returncode == 0, dry.stderr
    assert len(list((cache / "meta_forward").glob("*.json"))) == 1 and not (work / "sweeps").exists()
    other = run_hpml(["launch", *base, "workload.image_size=16", "workload.epochs=2"], cwd=work, env=env)
    assert other.returncode == 0, other.stdout + other.stderr  # a launch that ran: its own model check kept too
    assert len(list((cache / "meta_forward").glob("*.json"))) == 2


def test_the_kept_answer_is_the_computed_one_and_reading_it_imports_no_torch(tmp_path, monkeypatch):
    from hpml.conf import model_input

    monkeypatch.setenv("HPML_CACHE_DIR", str(tmp_path))
    model_input.meta_forward.cache_clear()
    computed = model_input.meta_forward("hpml_cnn", 28, 10, False, 1)  # nothing kept: computed, and not yet saved
    assert not (tmp_path / "meta_forward").exists()
    model_input.save_meta_forwards()
    read = read_back(tmp_path)  # another process, as the next launch
    assert not read["torch_imported"]
    assert read["answer"] == computed.__dict__ == model_input.computed_meta_forward("hpml_cnn", 28, 10, False, 1).__dict__
    assert computed.parameters > 0 and computed.problem is None
    model_input.meta_forward.cache_clear()


def test_a_damaged_or_foreign_cache_file_is_computed_again(tmp_path, monkeypatch):
    from hpml.conf import model_input

    monkeypatch.setenv("HPML_CACHE_DIR", str(tmp_path))
    key = ("hpml_cnn", 28, 10, False, 1)
    kept = model_input._cache_path(key)
    kept.parent.mkdir(parents=True)
    right = model_input.computed_meta_forward(*key)
    for damage in ("{not json", json.dumps({"unknown_field": 1}), json.dumps([1, 2])):
        kept.write_text(damage)
        model_input.meta_forward.cache_clear()
        assert model_input.meta_forward(*key) == right
    # another version of torch, torchvision or hpml's model code is another key
    model_input._code_version.cache_clear()
    monkeypatch.setattr(importlib.metadata, "version", lambda dist: "0.0-other")  # model_answers imports it late
    assert model_input._cache_path(key).name != kept.name
    monkeypatch.undo()
    model_input._code_version.cache_clear()
    assert model_input._cache_path(key).name == kept.name
    model_input.meta_forward.cache_clear()
