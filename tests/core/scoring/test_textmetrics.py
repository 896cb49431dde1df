"""Text metrics against values worked out by hand from the definitions `evaluate` uses."""

import math

import pytest

from lmms_eval_earthsci.core.scoring import textmetrics as core_textmetrics


def test_bleu_brevity_penalty_and_order_four():
    # all n-gram precisions are 1; the candidate is 5 tokens against 6: BP = exp(1 - 6/5)
    assert core_textmetrics.bleu("a b c d e f", "a b c d e") == pytest.approx(math.exp(1 - 6 / 5))
    assert core_textmetrics.bleu("hello there general kenobi", "hello there general kenobi") == 1.0
    # fewer than 4 tokens: no 4-gram, no smoothing -> 0 (why short OE answers mostly score 0)
    assert core_textmetrics.bleu("Tang dynasty", "Tang dynasty") == 0.0
    # 13a tokenisation splits punctuation: "mat." == "mat ."
    assert core_textmetrics.bleu("the cat sat on the mat .", "the cat sat on the mat.") == 1.0
    with pytest.raises(ZeroDivisionError):
        core_textmetrics.bleu("a b c d", "")


def test_bleu_partial_matches():
    ref, hyp = "the cat sat on the red mat today", "the cat sat on a red mat today"
    # 1-grams 7/8, 2-grams 5/7, 3-grams 3/6, 4-grams 1/5; same length (no brevity penalty)
    expected = math.exp((math.log(7 / 8) + math.log(5 / 7) + math.log(3 / 6) + math.log(1 / 5)) / 4)
    assert core_textmetrics.bleu(ref, hyp) == pytest.approx(expected)


def test_rouge_f_measures():
    r = core_textmetrics.rouge("the cat sat on the mat", "the cat on the mat")
    assert r["rouge1"] == pytest.approx(2 * 1 * (5 / 6) / (1 + 5 / 6))
    assert r["rouge2"] == pytest.approx(2 * (3 / 4) * (3 / 5) / (3 / 4 + 3 / 5))
    assert r["rougeL"] == pytest.approx(r["rouge1"])  # the LCS is the whole candidate
    assert core_textmetrics.rouge("Han and Tang dynasties", "TANG, dynasties!")["rouge1"] == pytest.approx(2 * 1 * 0.5 / 1.5)  # lower-cased, punctuation dropped


def test_meteor_stem_match_value():
    if core_textmetrics._wordnet() is None:
        pytest.skip("no WordNet here (Debian wordnet-base or NLTK data)")
    # ref 4 tokens, hyp 2; "tang" exact, "dynasty"~"dynasties" by Porter stem: P=1, R=1/2, one chunk
    fmean = (1 * 0.5) / (0.9 * 1 + 0.1 * 0.5)
    assert core_textmetrics.meteor("Han and Tang dynasties", "Tang dynasty") == pytest.approx(fmean * (1 - 0.5 * (1 / 2) ** 3))
    # identical 6-token sentences: one chunk, penalty 0.5 * (1/6)^3
    assert core_textmetrics.meteor("it is a guide to action", "it is a guide to action") == pytest.approx(1 - 0.5 / 216)


def test_missing_resources_are_unavailable_not_errors(monkeypatch, tmp_path, caplog):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv(core_textmetrics.BERTSCORE_MODEL_ENV, str(tmp_path / "no-model-here"))
    core_textmetrics._bertscorer.cache_clear()
    try:
        assert core_textmetrics.bertscore_f1(["a b"], ["a b"]) is None
        assert core_textmetrics.bertscore_f1([], []) == []
        assert any("BERTScore is unavailable" in r.message for r in caplog.records)
    finally:
        core_textmetrics._bertscorer.cache_clear()
    scores = core_textmetrics.sample_scores("Han and Tang dynasties", "Tang dynasty")
    # no stemmer: only "tang" matches (P 1/2, R 1/4)
    assert scores["rouge1"] == pytest.approx(100 / 3) and scores["bleu"] == 0.0
    assert core_textmetrics.sample_scores("ref", "   ") is None


@pytest.mark.parametrize("hub_is", ["offline", "absent", "slow"])
def test_bertscore_is_unavailable_in_seconds_when_the_hub_is_not_there(hub_is, monkeypatch, tmp_path):
    """No wait on Hub retries: HF_HUB_OFFLINE, a Hub that refuses connections, and one that does not answer
    in time (the network is replaced by a timeout) each make BERTScore unavailable at once when its model
    is not cached, and the reason says which it was and the variable that points at a local model."""
    import time

    from huggingface_hub import constants

    from lmms_eval_earthsci.core.data import hub

    monkeypatch.delenv(core_textmetrics.BERTSCORE_MODEL_ENV, raising=False)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub"))  # an empty cache, whatever this machine holds
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")  # nothing listens on the discard port here
    if hub_is == "offline":
        monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    else:
        monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    if hub_is == "slow":
        def no_answer(*args, **kwargs):
            raise TimeoutError("timed out")

        monkeypatch.setattr(hub.socket, "create_connection", no_answer)
    core_textmetrics._bertscorer.cache_clear()
    hub._probe.cache_clear()
    try:
        t0 = time.time()
        assert core_textmetrics.bertscore_f1(["a b"], ["a b"]) is None
        assert time.time() - t0 < 10
        reason = core_textmetrics.unavailable_reason("bertscore")
        assert f"is {hub_is}" in reason and core_textmetrics.BERTSCORE_MODEL_ENV in reason and "'roberta-large' is not in the Hugging Face cache" in reason
        if hub_is == "absent":
            assert "127.0.0.1:9 cannot be reached" in reason
        if hub_is == "slow":
            assert "did not answer within" in reason
    finally:
        core_textmetrics._bertscorer.cache_clear()
        hub._probe.cache_clear()


@pytest.mark.slow  # a fresh interpreter (~3 s)
def test_a_judge_failure_warning_prints_once_after_rouge(tmp_path):
    """ROUGE's scorer used to announce its default tokenizer through absl's logging, whose first call runs
    logging.basicConfig() in a process that configured no logging: a stderr handler on the root logger,
    so every warning of ours was printed twice (loguru's line, then "WARNING:lmms_eval_earthsci:...").
    A fresh interpreter, as a run is: the warning once, and no handler left on the root logger."""
    import subprocess
    import sys

    script = (
        "import logging\n"
        "from lmms_eval_earthsci.core.adapter.integration import forward_logs\n"
        "forward_logs()\n"
        "from lmms_eval_earthsci.core.scoring import textmetrics\n"
        "assert textmetrics.rouge('Han and Tang dynasties', 'Tang dynasty')['rouge1'] > 0\n"
        "from lmms_eval_earthsci.core.judge.task_pass import judge_failed\n"
        "judge_failed([{'task': 'msearth_open', 'score': 1, 'cause': 'ConnectionRefusedError'}, {'task': 'msearth_open', 'score': 0}])\n"
        "print(len(logging.getLogger().handlers))\n"
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stderr.count("msearth_open: 1 of 2 judged docs failed (ConnectionRefusedError x 1); scored wrong") == 1, proc.stderr
    assert "WARNING:lmms_eval_earthsci" not in proc.stderr and proc.stdout.strip() == "0"
