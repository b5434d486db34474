"""`hpml model-stats`: every format and option a user can give, the bad input that must be one
`hpml: error:` line with exit 2 and nothing written, and VGG19 in seconds as a user runs it."""

from __future__ import annotations

import io
import os
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pandas as pd
import pytest

from hpml.launcher.cli import main
from tests.conftest import GROSS, run_hpml, timed_against

REPO = Path(__file__).resolve().parent.parent


def hpml(*args):
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(["model-stats", *args])
    return code, out.getvalue(), err.getvalue()


def test_vgg19_runs_in_seconds_from_the_command_line(tmp_path):
    result, small, ratios = timed_against(
        lambda: run_hpml(["model-stats", "vgg19", "--no-bias"], cwd=REPO, timeout=600),
        lambda: run_hpml(["model-stats", "hpml_cnn"], cwd=REPO, timeout=600))
    assert small.returncode == 0, small.stderr
    assert result.returncode == 0, result.stderr
    # VGG19 (143 M parameters, 20 GFLOPs) costs about what hpml's small CNN costs, both from the command line one
    # after the other (interpreter, torch and torchvision imports included, most of either): a command that took
    # GROSS times a start-up to count a model is broken, on any machine
    assert min(ratios) < GROSS, ratios
    assert "| features.0 | Conv2d | 1x64x224x224 | 3,211,264 | 12.8 MB | 1,728 |" in result.stdout


def test_markdown_has_rows_totals_shares_and_receptive_fields():
    code, out, err = hpml("vgg16")
    assert code == 0 and err == ""
    assert out.startswith("# hpml model-stats vgg16: input 3x224x224, batch 1, float32, with biases\n")
    assert "| parameters | 138,357,544 (138 M) |" in out
    assert "| convolutions' share of FLOPs | 99.20 % |" in out
    assert "| features.30 | MaxPool2d | 1x512x7x7 | 25,088 | 100 kB | 0 | 0 | 0 | 212 (jump 32) |" in out
    assert "FlopCounterMode" in out and "FLOPs = 2 x MACs" in out


def test_csv_holds_exact_counts_whose_columns_sum_to_the_totals(tmp_path):
    out_file = tmp_path / "vit.csv"
    code, out, _ = hpml("vit_b_16", "--format", "csv", "--out", str(out_file))
    assert code == 0 and out == f"wrote {out_file}\n"
    frame = pd.read_csv(out_file)
    assert frame["layer"].iloc[-1] == "(outside leaf modules)"
    assert frame["params"].sum() == 86_567_656
    assert frame["macs"].sum() == pytest.approx(17.564e9, rel=0.005)
    assert (frame["flops"] == 2 * frame["macs"]).all()


def test_latex_tables():
    code, out, _ = hpml("alexnet", "--format", "tex", "--no-bias", "--dtype", "bfloat16", "--batch", "2")
    assert code == 0
    assert out.count(r"\begin{table}") == 2 and r"\toprule" in out
    assert r"features.0 & Conv2d & 2x64x55x55 & 387,200 & 774 kB & 23,232 &" in out  # 11*11*3*64, 2-byte dtype


def test_figure_is_a_png(tmp_path):
    png = tmp_path / "alexnet.png"
    code, out, _ = hpml("alexnet", "--figure", str(png))
    assert code == 0 and f"wrote {png}" in out
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_inception_comparison():
    code, out, _ = hpml("--inception")
    assert code == 0
    assert "| naive | 32x32x480 | 528,482,304 | 528,482,304 |" in out
    assert "| with 1x1 reductions | 32x32x256 | 180,879,360 | 180,879,360 |" in out
    assert "save 65.8 % of the multiplies" in out
    code, out, _ = hpml("--inception", "--format", "csv")
    assert pd.read_csv(io.StringIO(out))["multiplies"].tolist() == [528_482_304, 180_879_360]


def test_list_names_hpml_and_torchvision_models():
    code, out, _ = hpml("--list")
    names = dict(line.split("\t") for line in out.splitlines())
    assert names["hpml_cnn"] == "hpml" and names["vgg19"] == "torchvision" and "fasterrcnn_resnet50_fpn" not in names


def test_hpml_own_model():
    code, out, _ = hpml("hpml_cnn", "--input", "3x32x32", "--classes", "10")
    assert code == 0 and "| parameters | 94,762 (94.8 k) |" in out


@pytest.mark.parametrize("args, message", [
    (["vgg91"], "unknown model 'vgg91': did you mean vgg19"),
    (["not_a_model"], "hpml model-stats --list lists all"),
    ([], "give a MODEL"),
    (["vgg19", "--input", "3x224"], "--input must be CxHxW with positive integers"),
    (["vgg19", "--input", "3x0x224"], "--input must be CxHxW"),
    (["vgg19", "--dtype", "int8"], "invalid choice: 'int8' (choose from 'float32', 'bfloat16', 'float16', 'float64')"),
    (["vgg19", "--format", "pdf"], "(choose from 'md', 'csv', 'tex')"),
    (["vgg19", "--batch", "0"], "--batch must be an integer from 1 to 2147483647, got 0"),
    (["vgg19", "--batch", "99999999999999999999999"], "--batch must be an integer from 1 to 2147483647"),
    (["vgg19", "--input", "\u00b2x2x2"], "--input must be CxHxW with positive integers"),
    (["vgg19", "--input", "3x2147483647x2147483647"], "vgg19 cannot run on a 3x2147483647x2147483647 input: "),
    (["vit_b_16", "--input", "3x32x32"], "vit_b_16 cannot run on a 3x32x32 input: Wrong image height!"),
    (["--inception", "--input", "2147483647x2147483647x2147483647"], "--inception cannot count a "),
    (["vgg19", "--input", "3x8x8"], "vgg19 cannot run on a 3x8x8 input: "),
    (["--inception", "--batch", "2"], "--inception takes --input, --format and --out only, not --batch"),
    (["vgg19", "--bogus"], "unrecognized arguments: --bogus"),
    (["vgg19", "--input", "3x" + "2" * 5000 + "x3"], "an argument of 5,004 characters ('3x222222222222222222'...): "
                                                     "at most 4096"),
    (["vgg19", "--input", "3x" + "2" * 4000 + "x3"], "got '3x22222222222222222222222222222222222222222222222222222222"
                                                     "22... (4,004 characters)'"),
    (["a" * 4000], "unknown model 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa... (4,000 characters)'"),
    (["vgg19", "--dtype", "x" * 4000], "invalid choice: 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx...' "
                                       "(4,000 characters) (choose from"),
    (["vgg19", "--list"], "--list takes no other argument, got 'vgg19 --list"),
])
def test_bad_input_is_one_error_line_and_exit_2(tmp_path, args, message):
    code, out, err = hpml(*args, "--out", str(tmp_path / "stats.md"), "--figure", str(tmp_path / "f.png")) \
        if "--inception" not in args else hpml(*args, "--out", str(tmp_path / "stats.md"))
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("hpml: error: ") and message in err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("out, figure, message", [
    ("{tmp}", None, "give a file name, not a folder"),
    ("{tmp}/stats.md", "{tmp}/stats.txt", "--figure {tmp}/stats.txt: the file name must end in .png"),
    ("{tmp}/same.png", "{tmp}/same.png", "--out and --figure are the same file"),
])
def test_unwritable_outputs_are_refused_before_anything_is_written(tmp_path, out, figure, message):
    args = ["alexnet", "--out", out.format(tmp=tmp_path)] + (["--figure", figure.format(tmp=tmp_path)] if figure else [])
    code, out_text, err = hpml(*args)
    assert code == 2 and out_text == ""
    assert err.count("\n") == 1 and message.format(tmp=tmp_path) in err
    assert list(tmp_path.iterdir()) == []


def test_missing_output_folder_is_refused_before_counting(tmp_path):
    missing = tmp_path / "no"
    code, _, err = hpml("vgg19", "--out", str(missing / "x.md"))
    assert code == 2 and err == f"hpml: error: --out {missing / 'x.md'}: folder {missing} does not exist\n"


@pytest.mark.parametrize("option, name", [("--out", "pipe.md"), ("--figure", "pipe.png")])
def test_a_fifo_is_refused_rather_than_waited_on(tmp_path, option, name):
    fifo = tmp_path / name
    os.mkfifo(fifo)
    code, out, err = hpml("alexnet", option, str(fifo))  # opening a FIFO nobody reads would block forever
    assert code == 2 and out == ""
    assert err == f"hpml: error: {option} {fifo}: is a FIFO; give a file (without --out the output goes to stdout, " \
                  "which can be piped)\n"


def test_a_name_too_long_and_a_folder_not_writable_are_one_line(tmp_path, monkeypatch):
    long_name = tmp_path / ("a" * 300 + ".md")
    code, _, err = hpml("alexnet", "--out", str(long_name))
    assert code == 2 and err.startswith("hpml: error: --out ") and err.endswith(" characters): File name too long\n")
    monkeypatch.setattr("hpml.contract.folders.os.access", lambda path, mode: False)  # root may write anywhere
    code, _, err = hpml("alexnet", "--out", str(tmp_path / "x.md"))
    assert code == 2 and err == f"hpml: error: --out {tmp_path / 'x.md'}: folder {tmp_path} may not be written in\n"
    (tmp_path / "old.md").write_text("kept")
    code, _, err = hpml("alexnet", "--out", str(tmp_path / "old.md"))
    assert code == 2 and "old.md: the file may not be written (permission denied)" in err
    assert (tmp_path / "old.md").read_text() == "kept"


def test_character_devices_and_huge_inputs_are_fine():
    """/dev/null is written like a file; a huge input or batch costs no memory on the meta device."""
    code, out, err = hpml("resnet50", "--input", "3x100000x100000", "--batch", "1000", "--out", "/dev/null")
    assert (code, out, err) == (0, "wrote /dev/null\n", "")


def test_a_regnet_head_of_2_31_classes_is_counted_on_any_machine_without_allocating_it(tmp_path):
    """RegNet's constructor runs on the CPU (its widths are tensor values); its layers' weights are made on the meta
    device, so a head of 2**31 - 1 classes (3.8 TB of float32) is counted alike on every host, whatever its memory
    and overcommit (it failed to allocate on a 24 GiB machine and was counted on a 125 GiB one)."""
    out = tmp_path / "stats.csv"
    assert main(["model-stats", "regnet_y_400mf", "--classes", "2147483647", "--format", "csv", "--out", str(out)]) == 0
    table = pd.read_csv(out)
    fc = table[table["layer"] == "fc"].iloc[0]
    assert fc["params"] == 441 * (2**31 - 1)  # 440 inputs x classes + one bias each
    assert fc["macs"] == 440 * (2**31 - 1)
