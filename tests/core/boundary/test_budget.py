"""At what size a figure reaches the model (``core.boundary.budget``): the probe figure through classes shaped like
lmms-eval's with a real transformers processor (LLaVA's CLIP image processor: a fixed 32 x 32 crop), the sizes a
processor's output shows (a Qwen grid of patches, ``pixel_values``), the task's figure statistics against a budget,
and figure sizes read from headers (``core.data``'s ``sizes_only``) equal to what decoding gives."""

import logging

import pytest
from PIL import Image

transformers = pytest.importorskip("transformers")
torch = pytest.importorskip("torch")

from test_observe import Base, GemmaLike, LlamaLike, TinyLM, clip_processor  # noqa: E402

from lmms_eval_earthsci.core.boundary import budget, observe  # noqa: E402
from lmms_eval_earthsci.core.boundary import probe as layout_probe  # noqa: E402
from lmms_eval_earthsci.core.data import loading, repo_files  # noqa: E402


@pytest.fixture(scope="module")
def processor():
    return clip_processor()


class ChatLike(Base):
    """A chat class that inserts a default system turn before the task's messages (as lmms-eval's qwen3_vl does)."""

    is_simple = False

    def generate_until(self, requests):
        for _ctx, doc_to_messages, _gen_kwargs, doc_id, task, split in [r.args for r in requests]:
            messages = [{"role": "system", "content": [{"type": "text", "text": "You are a helpful assistant."}]}, *doc_to_messages(self.task_dict[task][split][doc_id])]
            text = self.processor.apply_chat_template(messages, add_generation_prompt=True)
            images = [p["url"] for m in messages for p in m["content"] if p["type"] == "image"]
            self._model.generate(**self.processor(text=[text], images=images, return_tensors="pt"))
        return ["x"]


FIRST_SYSTEM_ONLY = ("{% for m in messages %}{% if m['role'] == 'system' and not loop.first %}{{ raise_exception('System message must be at the beginning.') }}{% endif %}"
                     "<|{{ m['role'] }}|>{% for c in m['content'] %}{% if c['type'] == 'image' %}<image>{% else %}{{ c['text'] }}{% endif %}{% endfor %}\n{% endfor %}"
                     "{% if add_generation_prompt %}<|assistant|>{% endif %}")


def test_the_probe_figure_reaches_a_clip_processor_at_its_crop(processor):
    """LLaVA's CLIP processor crops every figure to 32 x 32: the budget is that, capped, its tokens the
    image token's count in the processor's own ids for one figure."""
    direct = processor(text=["<image>Q"], images=[Image.new("RGB", (64, 64))], return_tensors="pt")
    tokens = int((direct["input_ids"][0] == processor.image_token_id).sum())
    for cls in (LlamaLike, GemmaLike):
        got = budget.observe_budget(cls(processor, TinyLM()))
        assert got["status"] == budget.OBSERVED and got["reached"] == [32, 32] and got["tokens"] == tokens > 1, (cls, got)
        assert got["capped"] is True and got["max_pixels"] == 32 * 32 and got["probe"] == list(budget.PROBE_SIZE)


def test_the_budget_is_observed_once_per_class_object(processor):
    lm = LlamaLike(processor, TinyLM())
    calls = []
    cls_call = type(processor).__call__

    def counting(self, *a, **k):
        calls.append(1)
        return cls_call(self, *a, **k)

    type(processor).__call__ = counting
    try:
        first = budget.observe_budget(lm)
        assert len(calls) == 2 and first["tokens_small"] == first["tokens"]  # the probe figure and a small one (cropped alike)
        assert budget.observe_budget(lm) is first and len(calls) == 2
    finally:
        type(processor).__call__ = cls_call


def test_a_server_class_is_sent_nothing_and_the_server_decides():
    class Api(Base):
        def generate_until(self, requests):
            raise AssertionError("a server class is never sent the probe")

    got = budget.observe_budget(Api(), server=True)
    assert got["status"] == budget.SERVER_DECIDES and got["reached"] == list(budget.PROBE_SIZE) and got["why"] == budget.SERVER_WHY


def test_a_class_without_a_processor_has_no_observed_budget():
    got = budget.observe_budget(Base(model=TinyLM()))
    assert got["status"] == budget.NOT_OBSERVED and got["why"]


def test_a_qwen_grid_gives_the_size_and_tokens_per_image():
    # Qwen2.5-VL's real preprocessor config (patch 14, merge 2): 4000 x 3000 -> a 214 x 286 grid -> 4004 x 2996, 15,301 tokens
    sizes = observe.sizes_from([7] * 15301 + [1, 2], 7, [[1, 214, 286]], 14, 2, None, 1)
    assert sizes == {"tokens": 15301, "per_image": [15301], "reached": [[4004, 2996]]}
    two = observe.sizes_from([7] * 8, 7, [[1, 4, 4], [1, 2, 8]], [14, 14], 2, None, 2)
    assert two["per_image"] == [4, 4] and two["reached"] == [[56, 56], [112, 28]]


def test_pixel_values_give_a_size_only_with_one_picture_per_image():
    one = observe.sizes_from(None, None, None, None, None, torch.zeros((2, 3, 336, 448)), 2)
    assert one["reached"] == [[448, 336], [448, 336]] and one["tokens"] is None
    tiles = observe.sizes_from([5, 5, 5], 5, None, None, None, torch.zeros((5, 3, 448, 448)), 1)  # InternVL's tiles: no single size
    assert tiles["reached"] is None and tiles["per_image"] == [3]


CAPPED = {"status": budget.OBSERVED, "capped": True, "max_pixels": 1_000_000}


def test_figure_stats_count_the_docs_above_the_budget_and_their_shrink():
    sizes = [[(1000, 1000)], [(2000, 1000), (500, 500)], [], [(4000, 3000)], [(1000, 1050)]]
    got = budget.figure_stats(sizes, CAPPED, 5)
    # 2 MP and 12 MP are above 1 MP; 1.05 MP is within processors' rounding of it (not counted as shrunk)
    assert got["above"] == 2 and got["median_shrink"] == 7.0 and got["max_shrink"] == 12.0
    assert got["with_figures"] == 4 and got["largest"] == [4000, 3000] and got["docs"] == 5 and got["why"] is None


def test_figure_stats_say_why_where_nothing_can_be_counted():
    assert budget.figure_stats([[], []], CAPPED, 2)["why"] == "no figures"
    server = budget.figure_stats([[(10, 10)]], {"status": budget.SERVER_DECIDES, "why": budget.SERVER_WHY}, 1)
    assert server["above"] is None and server["why"] == budget.SERVER_WHY
    uncapped = budget.figure_stats([[(4000, 3000)]], {"status": budget.OBSERVED, "capped": False}, 1)
    assert uncapped["above"] == 0 and uncapped["why"] is None  # smaller than the probe figure, which was not shrunk
    tokens_only = budget.figure_stats([[(4000, 3000)]], {"status": budget.OBSERVED, "capped": None}, 1)
    assert tokens_only["above"] is None and "no resized size" in tokens_only["why"]


def test_sizes_only_reads_headers_and_gives_the_decoded_size(tmp_path):
    path = str(tmp_path / "fig.jpg")
    Image.new("RGB", (3000, 2000), (10, 20, 30)).save(path, quality=70)
    for max_pixels, max_side in ((None, None), (None, 1000), (1_000_000, None), (1_000_000, 800)):
        assert repo_files.decoded_size(path, max_pixels, max_side) == repo_files.decode_image(path, max_pixels, max_side).size
    cache = repo_files.DecodedCache()
    with loading.sizes_only():
        got = cache.get(path, None, 1000)
        cell = loading.load_image({"bytes": open(path, "rb").read(), "path": None}, dataset="d", record_id="r", field="f")
    assert isinstance(got, loading.FigureSize) and got.size == (1000, 666) and cache.misses == 0
    assert cell.size == (3000, 2000) and cell._im is None  # opened, not decoded
    assert not loading.reading_sizes()


def test_the_interleaving_probe_passes_a_template_that_wants_one_first_system_turn(processor):
    """A class that inserts a system turn, a template that raises on a second: the probe's own conversation
    carries none, so the class's interleaving is observed (not 'not checked')."""
    import copy

    strict = copy.deepcopy(processor)
    strict.chat_template = FIRST_SYSTEM_ONLY
    lm = ChatLike(strict, TinyLM())
    images = [observe.probe_image(c) for c in observe.PALETTE[:2]]
    seen = observe.observe(lm, observe.request_args(False, "A) B) Q", layout_probe._probe_conversation(*images)))
    assert seen.seen, seen.why
    assert layout_probe._loses_interleaving(lm) is False
    assert budget.observe_budget(lm)["status"] == budget.OBSERVED


def test_a_probe_that_fails_warns_once_naming_check_model(caplog):
    verdicts = {f"t{i}": {"status": layout_probe.NOT_CHECKED, "class": "Qwen3_VL", "why": "probe failed: TemplateError: System message must be at the beginning."}
                for i in range(3)}
    with caplog.at_level(logging.WARNING, logger="lmms_eval_earthsci"):
        layout_probe._warn_unseen(verdicts, {})
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 1 and "the layout probe failed for 3 task(s)" in lines[0] and "TemplateError" in lines[0] and "check-model" in lines[0]


def test_the_budget_in_words():
    capped = {"status": budget.OBSERVED, "capped": True, "max_pixels": 1456 * 1092, "reached": [1456, 1092], "tokens": 2028}
    assert layout_probe.budget_line(capped) == "up to 1.6 MP (1456 x 1092, 2,028 visual tokens)"
    assert layout_probe.budget_line({**capped, "max_pixels": 1024, "reached": [32, 32], "tokens": 1}) == "up to 1,024 px (32 x 32, 1 visual token)"
    assert layout_probe.budget_line({"status": budget.OBSERVED, "capped": None, "reached": None, "tokens": 20}) == "as 20 visual tokens for a 15.9 MP figure"
    assert layout_probe.budget_line({"status": budget.OBSERVED, "capped": False, "reached": list(budget.PROBE_SIZE), "tokens": 9}).startswith("at full size, up to at least 15.9 MP")
    assert layout_probe.pixels_in_words(259_000) == "0.26 MP"
