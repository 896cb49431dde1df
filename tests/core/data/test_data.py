import io

import pytest
from PIL import Image

from lmms_eval_earthsci.core import data


def test_mirror_resolution(tmp_path, monkeypatch):
    (tmp_path / "luckychao" / "EMMA-mini").mkdir(parents=True)
    monkeypatch.setenv(data.MIRROR_ENV, str(tmp_path))
    path, kwargs = data.resolve_dataset("luckychao/EMMA-mini", {"revision": "abc", "token": True, "num_proc": 1})
    assert path == str(tmp_path / "luckychao" / "EMMA-mini")
    assert kwargs == {"num_proc": 1}  # Hub-only settings dropped
    # a repo that is not ours and not mirrored falls back to the Hub untouched
    assert data.resolve_dataset("lmms-lab/ai2d", {"token": True}) == ("lmms-lab/ai2d", {"token": True})
    # one of ours missing from the mirror: a clear error, never a silent Hub attempt. Its repos are ours once
    # our entry point declared them on the runtime (conftest: as in every lmms-eval process), before any download
    from lmms_eval_earthsci.core.runtime import current

    assert "MSEarth/MSEarth_MCQ" in current().datasets
    with pytest.raises(data.MirrorError, match="MSEarth/MSEarth_MCQ"):
        data.resolve_dataset("MSEarth/MSEarth_MCQ", None)


def test_a_mirror_path_one_level_too_deep_names_the_parent(tmp_path, monkeypatch):
    """EARTHSCI_DATA_MIRROR=<mirror>/MSEarth: the folder holds the <name>/ folders of the <org>/<name>/ layout;
    the error names the mirror's root, not a `mirror` command that would build one in the wrong folder."""
    import lmms_eval_earthsci.evals.emma.tasks  # noqa: F401
    import lmms_eval_earthsci.evals.msearth.tasks  # noqa: F401

    (tmp_path / "MSEarth" / "MSEarth_MCQ").mkdir(parents=True)
    monkeypatch.setenv(data.MIRROR_ENV, str(tmp_path / "MSEarth"))
    for repo in ("MSEarth/MSEarth_MCQ", "luckychao/EMMA-mini"):
        with pytest.raises(data.MirrorError) as err:
            data.resolve_dataset(repo, None)
        assert "one level too deep" in str(err.value) and f"set {data.MIRROR_ENV}={tmp_path} (the mirror's root" in str(err.value)
        assert "lmms-eval-earthsci mirror" not in str(err.value)


def test_no_mirror_means_hub(monkeypatch):
    monkeypatch.delenv(data.MIRROR_ENV, raising=False)
    assert data.resolve_dataset("luckychao/EMMA", {"revision": "r"}) == ("luckychao/EMMA", {"revision": "r"})


def test_require_names_dataset_record_and_field():
    rec = {"pid": "x", "answer": None, "options": "A"}
    with pytest.raises(data.RecordError, match=r"EMMA/Math: record 'x', field 'question': missing"):
        data.require(rec, "question", dataset="EMMA/Math", record_id="x")
    with pytest.raises(data.RecordError, match="field 'answer': is None"):
        data.require(rec, "answer", dataset="EMMA/Math", record_id="x")
    with pytest.raises(data.RecordError, match="field 'options': expected list, got str"):
        data.require(rec, "options", dataset="EMMA/Math", record_id="x", types=list)
    assert data.require(rec, "answer", dataset="d", record_id="x", allow_none=True) is None


def test_load_image_forms(tmp_path):
    img = Image.new("L", (4, 3), 128)
    buf = io.BytesIO()
    img.save(buf, format="PNG")
    raw = buf.getvalue()
    path = tmp_path / "f.png"
    path.write_bytes(raw)
    for value in (img, raw, {"bytes": raw, "path": None}, {"bytes": None, "path": str(path)}, str(path)):
        out = data.load_image(value, dataset="d", record_id=1, field="image")
        assert out.mode == "RGB" and out.size == (4, 3)
    with pytest.raises(data.RecordError, match="record 7, field 'image_2': image is missing"):
        data.load_image(None, dataset="d", record_id=7, field="image_2")
    with pytest.raises(data.RecordError, match="cannot be decoded"):
        data.load_image(b"not a png", dataset="d", record_id=7, field="image")


@pytest.mark.parametrize("status, fix", [(401, "set HF_TOKEN"), (403, "accept the dataset's terms"), (404, "check the pin")])
def test_a_hub_refusal_deep_in_the_chain_is_named_in_one_line(status, fix):
    """`datasets` re-raises the Hub's error as a bare FileNotFoundError("404 Client Error."), the real one
    (with its response) in the chain; lmms-eval wraps that again. The refusal is found and named."""

    class Response:  # what huggingface_hub's HTTP errors carry
        status_code = status
        url = "https://hub.example/datasets/org/name/resolve/abc123/data/test-00000.parquet"

    class HubError(Exception):
        response = Response()

    try:
        try:
            raise HubError("Client Error")
        except HubError as e:
            raise FileNotFoundError(f"{status} Client Error.") from e
    except FileNotFoundError as exc:
        refused = data.hub_refusal(exc, "org/name", None)
    assert isinstance(refused, data.HubRefusedError) and "\n" not in str(refused)
    assert str(refused).startswith(f"the Hugging Face Hub answered {status} for org/name file data/test-00000.parquet at revision abc123 (")
    assert fix in str(refused) and "EARTHSCI_DATA_MIRROR" in str(refused)
    assert data.hub_refusal(FileNotFoundError("no such file"), "org/name", None) is None  # anything else is left as it is
