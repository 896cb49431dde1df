"""How a CLI run that includes tasks of ours ends (core.upstream.ledger), whatever stopped it: the exit status
and the last lines for each way a run can fall short, in the order the hooks note them. The same paths
through the real CLI: tests/core/adapter/test_exit_codes_e2e.py."""

import pytest

from lmms_eval_earthsci.core.upstream import ledger
from lmms_eval_earthsci.yamlgen import ours_near


@pytest.fixture(autouse=True)
def clean():
    ledger.take()
    yield
    ledger.take()


def test_a_task_not_ours_left_out_while_ours_ran_ends_with_exit_3_and_its_line(capsys):
    ledger.note_requested(["msearth_mcq"])
    ledger.note_other_not_loaded("ai2d", "ConnectionError: Couldn't reach 'lmms-lab-encoder/ai2d' on the Hub")
    assert "ai2d (not one of our tasks) could not load and is left out of this run" in capsys.readouterr().err  # said at once
    ledger.note_started()
    ledger.note_done()
    lines, code = ledger.take()
    assert code == ledger.OTHER == 3
    assert lines == ["lmms_eval_earthsci: ai2d did not run (exit 3): ConnectionError: Couldn't reach 'lmms-lab-encoder/ai2d' on the Hub"]
    assert all(ledger.is_last_line(line) for line in lines)


def test_a_run_stopped_before_ours_ran_names_them_and_why():
    ledger.note_requested(["msearth_mcq", "emma_mini"])
    ledger.note_started()
    ledger.note_run_stopped("the run stopped before them (OSError: no such model)", OSError("no such model"))
    ledger.note_run_stopped("a later cause")  # the first is kept
    lines, code = ledger.take()
    assert code == 3 and lines == ["lmms_eval_earthsci: msearth_mcq, emma_mini did not run (exit 3): the run stopped before them (OSError: no such model)"]


def test_a_run_that_never_got_to_its_end_says_so_without_a_cause():
    ledger.note_requested(["msearth_mcq"])
    ledger.note_started()
    lines, code = ledger.take()
    assert code == 3 and lines[0].startswith("lmms_eval_earthsci: msearth_mcq did not run (exit 3): the run stopped before they ran and were written")


def test_a_task_of_ours_that_could_not_load_keeps_exit_2_and_is_named_once():
    ledger.note_requested(["msearth_mcq", "emma_mini_math"])
    ledger.note_not_loaded("msearth_mcq", "no route to MSEarth/MSEarth_MCQ")
    ledger.note_started()
    ledger.note_run_stopped("the run stopped before them (RuntimeError: x)")
    lines, code = ledger.take()
    assert code == ledger.NOT_LOADED
    assert [line.split(" did not run")[0] for line in lines] == ["lmms_eval_earthsci: msearth_mcq", "lmms_eval_earthsci: emma_mini_math"]
    assert "(exit 3): the run stopped before them (RuntimeError: x)" in lines[1]


def test_an_evaluation_of_ours_that_raised_keeps_exit_1_and_its_own_line():
    exc = RuntimeError("boom")
    ledger.note_requested(["msearth_mcq"])
    ledger.note_started()
    ledger.note_stopped(["msearth_mcq"], exc)
    ledger.note_run_stopped("the run stopped before them (RuntimeError: boom)", exc)  # the same exception, seen again outside
    lines, code = ledger.take()
    assert code == ledger.STOPPED and len(lines) == 1 and ": the evaluation stopped (RuntimeError: boom)" in lines[0]


def test_a_finished_run_or_one_that_never_started_ends_as_it_is():
    ledger.note_requested(["msearth_mcq"], {"emma-mini": "emma_mini"})
    ledger.note_started()
    ledger.note_done()
    assert ledger.take() == ([], 0)
    ledger.note_requested(["msearth_mcq"], {"emma-mini": "emma_mini"})  # --power-analysis reads the names only
    assert ledger.take() == ([], 0)


def test_lmms_evals_own_task_close_to_ours_that_failed_names_ours_and_keeps_the_status():
    ledger.note_requested([], {"emma-mini": "emma_mini"})
    ledger.note_started()
    lines, code = ledger.take()
    assert code == 0 and lines == ["lmms_eval_earthsci: emma-mini is lmms-eval's own task, not ours: ours is emma_mini (--tasks emma_mini)"]
    assert ledger.is_last_line(lines[0])
    # left out in a run with ours: its line says it, once
    ledger.note_requested(["msearth_mcq"], {"emma-mini": "emma_mini"})
    ledger.note_other_not_loaded("emma-mini", "OpenAIError: Missing credentials")
    ledger.note_started()
    ledger.note_done()
    lines, code = ledger.take()
    assert code == 3 and lines == ["lmms_eval_earthsci: emma-mini did not run (exit 3): OpenAIError: Missing credentials (emma-mini is lmms-eval's own task, not ours: ours is emma_mini)"]


def test_names_close_to_ours():
    assert ours_near("emma-mini") == ["emma_mini"] and ours_near("EMMA-MINI") == ["emma_mini"]
    assert ours_near("emma") == ["emma_full", "emma_mini"]  # lmms-eval's full EMMA: our two sets
    assert ours_near("scifibench-f2c") == ["scifibench_f2c"]
    assert ours_near("ai2d") == [] and ours_near("mmmu_val") == [] and ours_near("emma_mini") == []


def test_known_causes_name_their_fix(monkeypatch):
    from lmms_eval_earthsci.core.data import hub
    from lmms_eval_earthsci.core.upstream.ledger import known_cause

    trap = RuntimeError("operator torchvision::nms does not exist")
    assert "`pip uninstall -y torchvision`" in known_cause(trap)
    try:  # the trap as lmms-eval meets it: raised while importing, under another error
        try:
            raise trap
        except RuntimeError as inner:
            raise ModuleNotFoundError("Could not import module 'AutoProcessor'") from inner
    except ModuleNotFoundError as outer:
        assert "`pip uninstall -y torchvision`" in known_cause(outer)

    class LocalTokenNotFoundError(EnvironmentError):
        pass

    token = LocalTokenNotFoundError("Token is required (`token=True`), but no token found. You need to provide a token or be logged in")
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")  # nothing listens on the discard port here
    hub._probe.cache_clear()
    said = known_cause(token)
    assert said.startswith("; reaching the Hub failed (127.0.0.1:9 cannot be reached") and "not a missing token" in said, said
    assert known_cause(ValueError("something else")) == ""
