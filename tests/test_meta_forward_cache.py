"""The preflight's model check (one meta-device forward) is kept on disk, so that a later launch needs no torch:
written only by a launch that goes ahead, read back equal, keyed by the code it depends on."""

from __future__ import annotations

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


def test_a_refused_or_dry_run_launch_writes_no_cache_and_a_launch_that_goes_ahead_does(tmp_path):
    cache = tmp_path / "cache"
    work = tmp_path / "work"
    work.mkdir()
    base = ["experiment=tiny/train", "workload.model=hpml_cnn", "workload.dataset=synthetic"]
    env = {"HPML_CACHE_DIR": str(cache)}
    dry = run_hpml(["launch", *base, "--dry-run"], cwd=work, env=env)
    assert dry.returncode == 0, dry.stderr
    refused = run_hpml(["launch", *base, "resources.nodes=2"], cwd=work, env=env)
    assert refused.returncode == 2, refused.stderr
    assert not (cache / "meta_forward").exists()  # neither wrote a thing
    launched = run_hpml(["launch", *base, "workload.epochs=2"], cwd=work, env=env)
    assert launched.returncode == 0, launched.stdout + launched.stderr
    assert len(list((cache / "meta_forward").glob("*.json"))) == 1


def test_the_kept_answer_is_the_computed_one_and_reading_it_imports_no_torch(tmp_path):
    from hpml.conf.model_input import computed_meta_forward

    first = read_back(tmp_path)  # nothing kept: computed (torch imported), and not saved by a plain call
    assert first["torch_imported"] and not (tmp_path / "meta_forward").exists()
    save = READ_BACK + "from hpml.conf.model_input import save_meta_forwards; save_meta_forwards()\n"
    subprocess.run([sys.executable, "-c", save], check=True, capture_output=True, timeout=300,
                   env={"HPML_CACHE_DIR": str(tmp_path), "PATH": "/usr/bin:/bin"})
    second = read_back(tmp_path)
    assert not second["torch_imported"]
    assert second["answer"] == first["answer"] == computed_meta_forward("hpml_cnn", 28, 10, False, 1).__dict__
    assert first["answer"]["parameters"] > 0 and first["answer"]["problem"] is None


def test_a_damaged_or_foreign_cache_file_is_computed_again(tmp_path):
    from hpml.conf import model_input

    read_back(tmp_path)
    save = READ_BACK + "from hpml.conf.model_input import save_meta_forwards; save_meta_forwards()\n"
    subprocess.run([sys.executable, "-c", save], check=True, capture_output=True, timeout=300,
                   env={"HPML_CACHE_DIR": str(tmp_path), "PATH": "/usr/bin:/bin"})
    [kept] = (tmp_path / "meta_forward").glob("*.json")
    for damage in ("{not json", json.dumps({"unknown_field": 1}), json.dumps([1, 2])):
        kept.write_text(damage)
        again = read_back(tmp_path)
        assert again["torch_imported"] and again["answer"]["parameters"] > 0
    # another version of torch, torchvision or hpml's model code is another key
    assert model_input._cache_path(("hpml_cnn", 28, 10, False, 1)).name == kept.name
    model_input._code_version.cache_clear()
    original = model_input.metadata.version
    try:
        model_input.metadata.version = lambda dist: "0.0-other"
        assert model_input._cache_path(("hpml_cnn", 28, 10, False, 1)).name != kept.name
    finally:
        model_input.metadata.version = original
        model_input._code_version.cache_clear()
