"""The `lmms-eval-earthsci` command: real argparse help everywhere, and check-mirror."""

import glob
import os
import shutil

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lmms_eval_earthsci import cli


def test_top_level_help_lists_every_command(capsys):
    with pytest.raises(SystemExit) as e:
        cli.main(["--help"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: lmms-eval-earthsci")
    for command in cli.COMMANDS:
        assert command in out


@pytest.mark.parametrize("command", ["tasks-dir", "report", "mirror", "check-mirror", "write-fixtures", "rescore"])
def test_subcommand_help_writes_nothing(command, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as e:
        cli.main([command, "--help"])
    assert e.value.code == 0
    assert capsys.readouterr().out.startswith(f"usage: lmms-eval-earthsci {command}")
    assert list(tmp_path.iterdir()) == []  # `write-fixtures --help` no longer writes a folder named --help


@pytest.mark.parametrize("command", [c for c in cli.COMMANDS if c != "run"] + ["mac build"])
def test_every_help_text_is_whole(command, capsys, tmp_path, monkeypatch):
    """No command's description stops mid-sentence (`check-model --help` once ended on "Two views per
    layout:": its docstring's first paragraph, cut before the list it announced)."""
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as e:
        cli.main([*command.split(), "--help"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    description = out.split("\n\n")[1]  # after the usage block, before the arguments
    assert not description.startswith(("options:", "positional arguments:")), out
    assert not description.rstrip().endswith((":", ",", ";", "-")), f"{command} --help stops mid-sentence: {description!r}"


@pytest.mark.parametrize("flag", ["--help", "-h"])
def test_demo_run_and_mac_build_help_exit_zero(flag, capsys, tmp_path, monkeypatch):
    """`demo`, `run` and `mac build` take their arguments verbatim, yet their help is help (exit 0)."""
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as e:
        cli.main(["demo", flag])
    assert e.value.code == 0 and capsys.readouterr().out.startswith("usage: lmms-eval-earthsci demo")
    assert cli.main(["run", flag]) == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: lmms-eval-earthsci run") and "lmms-eval --help" in out
    with pytest.raises(SystemExit) as e:
        cli.main(["mac", "build", flag])
    assert e.value.code == 0 and capsys.readouterr().out.startswith("usage: lmms-eval-earthsci mac build")
    assert list(tmp_path.iterdir()) == []  # nothing ran: no demo_output/, no snapshot


def test_check_mirror_on_a_missing_or_foreign_folder_says_so(tmp_path, capsys):
    assert cli.main(["check-mirror", str(tmp_path / "nowhere")]) == 2
    assert capsys.readouterr().err.strip() == f"lmms-eval-earthsci check-mirror: {tmp_path / 'nowhere'}: no such folder"
    assert cli.main(["check-mirror", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"lmms-eval-earthsci check-mirror: {tmp_path} holds none of our repos") and "\n" not in err


def test_rescore_errors_are_one_line(tmp_path, capsys):
    assert cli.main(["rescore", str(tmp_path / "nowhere"), "--out", str(tmp_path / "o")]) == 2
    assert capsys.readouterr().err.strip() == f"lmms-eval-earthsci rescore: {tmp_path / 'nowhere'}: no such folder"
    (tmp_path / "empty").mkdir()
    assert cli.main(["rescore", str(tmp_path / "empty"), "--out", str(tmp_path / "o")]) == 2
    assert "no *_results.json inside" in capsys.readouterr().err
    assert cli.main(["rescore", "--from", "emma-release", str(tmp_path / "x.jsonl"), "--out", str(tmp_path / "o")]) == 2
    assert "x.jsonl: no such file" in capsys.readouterr().err
    with pytest.raises(SystemExit) as e:
        cli.main(["rescore", str(tmp_path)])  # --out is required
    assert e.value.code == 2 and "--out" in capsys.readouterr().err


def test_release_files_read_in_every_layout_and_planned(tmp_path, capsys):
    """--from files: a JSON array, one object keyed by id, JSON Lines, gzip; the MSEarth plan is keyed by
    question_id, task read from the records, caption falling back to generated_answer."""
    import gzip
    import json

    from lmms_eval_earthsci.commands.rescore import RescoreError, read_records
    from lmms_eval_earthsci.evals.msearth.tasks import release_plan

    recs = [{"question_id": "ON1", "query": "<image>Caption:\nc\nQuestion:\nq", "response": "a", "generated_answer": "a"}, {"question_id": "ON2", "query": "<image>Caption:\nc\nQuestion:\nq", "response": "b"}]
    (tmp_path / "a.json").write_text(json.dumps(recs))
    (tmp_path / "o.json").write_text(json.dumps({r["question_id"]: r for r in recs}, indent=2))
    (tmp_path / "l.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
    (tmp_path / "g.jsonl.gz").write_bytes(gzip.compress((tmp_path / "l.jsonl").read_bytes()))
    for name in ("a.json", "o.json", "l.jsonl", "g.jsonl.gz"):
        assert read_records(str(tmp_path / name)) == recs, name
    plan = release_plan(str(tmp_path / "a.json"), {})
    assert plan["key"] == "question_id" and plan["tasks"] == "msearth_open" and plan["model"]["model_name"] == "a"
    assert plan["entries"] == {"msearth_open": {"ON1": {"responses": ["a"], "input": None, "target": None, "fields": {"response": "a"}}}}  # ON2: no answer
    cap = [{"question_id": "C1", "query": "<image>Describe it.", "response": "r", "generated_caption": " ", "generated_answer": "fallback"}]
    (tmp_path / "c.json").write_text(json.dumps(cap))
    assert release_plan(str(tmp_path / "c.json"), {})["entries"]["msearth_caption"]["C1"]["responses"] == ["fallback"]
    assert release_plan(str(tmp_path / "a.json"), {"tasks": "msearth_mcq_nocap"})["tasks"] == "msearth_mcq_nocap"
    for bad, want in ((recs + [recs[0]], "question_id ON1 appears twice"), ([{"query": "q"}], "record 1 has no question_id")):
        (tmp_path / "b.json").write_text(json.dumps(bad))
        with pytest.raises(RescoreError, match=want):
            release_plan(str(tmp_path / "b.json"), {})
    with pytest.raises(RescoreError, match="one of msearth_mcq"):
        release_plan(str(tmp_path / "a.json"), {"tasks": "emma_mini"})
    (tmp_path / "bad.jsonl").write_text('{"question_id": "x"}\nnot json\n')
    assert cli.main(["rescore", "--from", "msearth-release", str(tmp_path / "bad.jsonl"), "--out", str(tmp_path / "out")]) == 2
    assert capsys.readouterr().err.strip() == f"lmms-eval-earthsci rescore: {tmp_path / 'bad.jsonl'}, line 2: not JSON (Expecting value: line 1 column 1 (char 0))"


def test_no_command_is_an_error(capsys):
    with pytest.raises(SystemExit) as e:
        cli.main([])
    assert e.value.code == 2 and "usage:" in capsys.readouterr().err


@pytest.mark.slow
def test_check_mirror(mirror, tmp_path, capsys):
    assert cli.main(["check-mirror", mirror]) == 0
    out = capsys.readouterr().out
    assert "OK" in out.splitlines()[0] and "emma_mini_math: 3 records, all valid" in out
    assert "luckychao/EMMA-mini" in out and "our pin: 6b9ae9a" in out  # no recorded revision: says which pin to fetch

    bad = tmp_path / "bad"
    shutil.copytree(mirror, bad)
    path = glob.glob(str(bad / "jonathan-roberts1" / "SciFIBench" / "data" / "CS_Figure2Caption-*.parquet"))[0]
    table = pq.read_table(path)
    rows = table.to_pylist()
    rows[2]["Answer"] = "Z"
    pq.write_table(pa.Table.from_pylist(rows, schema=table.schema), path)
    assert cli.main(["check-mirror", str(bad), "--tasks", "scifibench_cs_f2c,emma_mini_math"]) == 1
    err = capsys.readouterr().err
    assert "scifibench_cs_f2c: 3 records, 1 invalid" in err and "field 'Answer': expected one letter A-E, got 'Z' [row 2]" in err
    assert "emma_mini_math: 3 records, all valid" in err

    # MuSciClaims: figures are looked up in the mirror being checked (not in $EARTHSCI_DATA_MIRROR)
    os.remove(bad / "StonyBrookNLP" / "MuSciClaims" / "paper_figures" / "bio_PIIS0092867400000001_images_figure_2.jpg")
    assert cli.main(["check-mirror", str(bad), "--tasks", "musciclaims_d,musciclaims_caption_only_d"]) == 1
    err = capsys.readouterr().err
    assert "musciclaims_d: 9 records, 3 invalid" in err and "musciclaims_caption_only_d: 9 records, all valid" in err
    assert (
        "record 'PIIS0092867400000001_2_contra', field 'associated_figure_filepath': figure not found: "
        f"tried 'paper_figures/bio_PIIS0092867400000001_images_figure_2.jpg', '*/bio_PIIS0092867400000001_images_figure_2.jpg' in {bad}/StonyBrookNLP/MuSciClaims [row 4]"
    ) in err

    assert cli.main(["check-mirror", str(tmp_path / "empty")]) == 2
    assert cli.main(["check-mirror", mirror, "--tasks", "nope"]) == 2


def test_run_names_the_nearest_of_our_tasks_for_a_typo(capsys):
    """`run` sees its arguments before lmms-eval loads: a name that looks like ours
    (a benchmark's prefix) but is none of our tasks or groups stops it, naming the nearest. Other names
    (lmms-eval's own tasks, upstream `emma`) pass untouched."""
    assert cli.main(["run", "--model", "dummy", "--tasks", "emma_mini_mat,mmmu_val,emma,mac2025_t2i_infoo", "--limit", "1"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err == [
        "lmms-eval-earthsci run: emma_mini_mat is none of our tasks or groups (did you mean emma_mini_math?)",
        "lmms-eval-earthsci run: mac2025_t2i_infoo is none of our tasks or groups (did you mean mac2025_t2i_info?)",
    ]
    assert cli._typos(["--tasks=earthsci,emma_mini_math,scifibench,mac2025_dad,mmmu_val"]) == []


def test_write_fixtures_says_one_line_per_repo(tmp_path, capfd):
    from lmms_eval_earthsci.testing.fixtures import writers

    assert cli.main(["write-fixtures", str(tmp_path / "fx")]) == 0
    out, err = capfd.readouterr()
    lines = out.splitlines()
    assert lines[0] == f"fixture mirror {tmp_path / 'fx'}:" and len(lines) == 1 + len(writers())
    assert all(line.startswith("  ") and " files, " in line for line in lines[1:])
    assert "Creating parquet" not in err and err.strip() == ""


def test_the_torchvision_fallback_warning_is_dropped_and_nothing_else():
    """We remove torchvision on purpose on CPU machines: transformers' warning about its PIL fallback says
    nothing to a user; any other warning of that logger still gets through."""
    import logging

    from lmms_eval_earthsci.core.adapter.integration import quiet_torchvision_fallback

    quiet_torchvision_fallback()
    quiet_torchvision_fallback()  # idempotent: one filter
    log = logging.getLogger("transformers.utils.import_utils")
    seen = []
    handler = logging.Handler()
    handler.emit = lambda record: seen.append(record.getMessage())
    log.addHandler(handler)
    try:
        log.warning("`CLIPImageProcessor` requires torchvision (not installed); falling back to `CLIPImageProcessorPil` for backward compatibility.")
        log.warning("something else")
    finally:
        log.removeHandler(handler)
    assert seen == ["something else"] and len(log.filters) == 1


def test_check_model_names_the_device_argument_a_cpu_run_needs():
    from lmms_eval_earthsci.commands.check_model import run_hint

    no_cuda = run_hint("AssertionError: Torch not compiled with CUDA enabled", "pretrained=x,device_map=cpu")
    assert no_cuda == " (this machine has no CUDA and the class's default device is cuda: add device=cpu to --model_args)"
    assert "device=cpu,device_map=cpu to --model_args" in run_hint("RuntimeError: Found no NVIDIA driver on your system", "pretrained=x")
    assert "device_map=auto on a GPU, device=cpu,device_map=cpu on CPU" in run_hint("ValueError: device_map='' is not supported", "pretrained=x")
    assert run_hint("OSError: no such model", "pretrained=x") == ""


@pytest.mark.e2e
def test_check_model_leaves_only_the_log_it_names_when_it_cannot_run(tmp_path, monkeypatch, capsys):
    """`--model dummy`: nothing reaches a processor, so the check cannot observe (exit 2): its temporary folder
    keeps lmms-eval's log, named on stderr, and nothing else; with --log, nothing is left in the temp folder."""
    from lmms_eval_earthsci.commands.check_model import main

    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)
    assert main(["--model", "dummy", "--tasks", "msearth_mcq"]) == 2
    left = [p for p in tmp_path.iterdir() if p.name.startswith("earthsci-check-model-")]
    assert len(left) == 1 and [p.name for p in left[0].iterdir()] == ["lmms-eval.log"]
    assert f"check-model: lmms-eval's log kept: {left[0] / 'lmms-eval.log'}" in capsys.readouterr().err
    assert main(["--model", "dummy", "--tasks", "msearth_mcq", "--log", str(tmp_path / "mine.log")]) == 2
    assert [p for p in tmp_path.iterdir() if p.name.startswith("earthsci-check-model-")] == left and (tmp_path / "mine.log").exists()


def test_a_command_that_meets_a_known_cause_ends_with_one_line_naming_its_fix(monkeypatch, capsys):
    """The torchvision trap met inside any command (the install tier meets the real one): exit 2 and one line;
    an error we know nothing of keeps its traceback."""
    def trapped(argv):
        raise RuntimeError("operator torchvision::nms does not exist")

    monkeypatch.setattr(cli, "_main", trapped)
    assert cli.main(["run", "--model", "dummy"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("lmms-eval-earthsci run: RuntimeError: operator torchvision::nms does not exist; ") and "`pip uninstall -y torchvision`" in err[0], err

    def other(argv):
        raise ValueError("something else")

    monkeypatch.setattr(cli, "_main", other)
    with pytest.raises(ValueError, match="something else"):
        cli.main(["report", "x"])
