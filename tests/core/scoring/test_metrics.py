import math

import pytest

from lmms_eval_earthsci.core.scoring import metrics as core_metrics


def test_breakdown_scores_every_key_present_and_multilabel():
    known = {"category": ["Legend", "3D", "Color & Texture"], "type": ["multiple choice", "open-ended"]}
    labels = {"category": core_metrics.split_labels("Legend; Color & Texture;Polar", ";"), "type": ["multiple choice"]}
    out, unknown = core_metrics.breakdown_scores("emma", 100.0, labels, known)
    assert out == {
        "emma_category_legend": 100.0,
        "emma_category_3d": None,
        "emma_category_color_texture": 100.0,
        "emma_type_multiple_choice": 100.0,
        "emma_type_open_ended": None,
    }
    assert unknown == ["category=Polar"]
    # case/punctuation variants land in the declared slot
    out, unknown = core_metrics.breakdown_scores("emma", 0.0, {"category": ["3d"]}, known)
    assert out["emma_category_3d"] == 0.0 and not unknown


def test_mean_present_and_aggregation_over_docs():
    items = [{"score": 100.0}, {"score": 0.0}, None, 100.0, None]
    assert core_metrics.mean_present(items) == pytest.approx(200 / 3)
    assert core_metrics.mean_present([None, None]) is None


def test_precision_recall_f1_known_values():
    golds = ["SUPPORT", "SUPPORT", "CONTRADICT", "NEUTRAL", "NEUTRAL", "NEUTRAL"]
    preds = ["SUPPORT", "NEUTRAL", "CONTRADICT", "NEUTRAL", None, "SUPPORT"]
    out = core_metrics.precision_recall_f1(golds, preds, ["SUPPORT", "CONTRADICT", "NEUTRAL"])
    assert out["precision_support"] == pytest.approx(0.5)
    assert out["recall_support"] == pytest.approx(0.5)
    assert out["f1_contradict"] == pytest.approx(1.0)
    assert out["precision_neutral"] == pytest.approx(0.5)
    assert out["recall_neutral"] == pytest.approx(1 / 3)
    assert out["f1_neutral"] == pytest.approx(0.4)
    assert out["macro_f1"] == pytest.approx((0.5 + 1.0 + 0.4) / 3)


def test_calibration_known_values():
    # two bins: conf 0.9 (2 docs, 1 right) and conf 0.3 (2 docs, both wrong)
    out = core_metrics.calibration([0.9, 0.9, 0.3, 0.3], [True, False, False, False], n_bins=10)
    assert out["ece"] == pytest.approx(0.5 * 0.4 + 0.5 * 0.3)
    assert out["rms"] == pytest.approx(math.sqrt(0.5 * 0.16 + 0.5 * 0.09))
    assert out["nll"] == pytest.approx(-(math.log(0.9) + math.log(0.1) + 2 * math.log(0.7)) / 4)
    perfect = core_metrics.calibration([1.0, 0.0], [True, False])
    assert perfect["ece"] == pytest.approx(0.0) and perfect["nll"] < 1e-9
    with pytest.raises(ValueError):
        core_metrics.calibration([1.5], [True])


def test_range_bins_cover_every_value_from_the_first_edge():
    edges = (1, 6, 11, 21)
    assert core_metrics.range_labels(edges) == ["1_5", "6_10", "11_20", "21_plus"]
    got = [core_metrics.range_label(v, edges) for v in (0, 0.5, 1, 5, 5.99, 6, 10, 11, 20.5, 21, 10_000, None, float("nan"))]
    assert got == [None, None, "1_5", "1_5", "1_5", "6_10", "6_10", "11_20", "11_20", "21_plus", "21_plus", None, None]
