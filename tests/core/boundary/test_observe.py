"""What a class hands its model, observed (``core.boundary.observe``): a real transformers processor (LLaVA's, with
a BPE tokenizer trained here and its PIL image processor) inside classes shaped like lmms-eval's: the
simple Gemma 3 route (data URLs through ``apply_chat_template(tokenize=True)``, images first, its
``except Exception`` around the call), the simple Llama-3.2-Vision route (``processor(images, prompt)``
positionally), a class that reaches ``generate`` without a processor, and one with neither. The probe
stops before generation, leaves no wrap, log line or probe doc behind, and its verdict says what was lost.
"""

import base64
import io
import logging

import pytest
from PIL import Image

transformers = pytest.importorskip("transformers")
torch = pytest.importorskip("torch")

from lmms_eval_earthsci.core.boundary import observe  # noqa: E402
from lmms_eval_earthsci.core.boundary.layout_verdict import NOT_OBSERVED, Verdict, layout_of, verdict_of  # noqa: E402  # noqa: E402

TEMPLATE = ("{% for m in messages %}<|{{ m['role'] }}|>{% if m['content'] is string %}{{ m['content'] }}{% else %}{% for c in m['content'] %}"
            "{% if c['type'] == 'image' %}<image>{% else %}{{ c['text'] }}{% endif %}{% endfor %}{% endif %}\n{% endfor %}"
            "{% if add_generation_prompt %}<|assistant|>{% endif %}")


@pytest.fixture(scope="module")
def processor():
    return clip_processor()


def clip_processor():
    """LLaVA's processor: a BPE tokenizer trained here, CLIP's PIL image processor (a 32 x 32 crop), patch 8."""
    from tiny_models import train_tokenizer
    from transformers import CLIPImageProcessorPil, LlavaProcessor

    tok = train_tokenizer(["<unk>", "<s>", "</s>", "<image>", "<pad>"], bos="<s>", eos="</s>", pad="<pad>", unk="<unk>", extra_special_tokens={"image_token": "<image>"})
    ip = CLIPImageProcessorPil(size={"shortest_edge": 32}, crop_size={"height": 32, "width": 32})
    return LlavaProcessor(image_processor=ip, tokenizer=tok, patch_size=8, vision_feature_select_strategy="default", chat_template=TEMPLATE,
                          image_token="<image>", num_additional_image_tokens=1)


class TinyLM(torch.nn.Module):
    """A generating model that must never generate during a probe."""

    generated = 0

    def __init__(self):
        super().__init__()
        self.w = torch.nn.Linear(2, 2)

    def generate(self, **kwargs):
        TinyLM.generated += 1
        return torch.zeros((1, 2), dtype=torch.long)


class Base:
    is_simple = True

    def __init__(self, processor=None, model=None):
        self.task_dict = {}
        if processor is not None:
            self.processor = processor
        if model is not None:
            self._model = model


class GemmaLike(Base):
    """lmms-eval 0.7.3's simple gemma3: every image first (as a JPEG data URL), <image> dropped, the whole
    processor call inside ``except Exception`` that logs."""

    def generate_until(self, requests):
        out = []
        for ctx, _gen_kwargs, doc_to_visual, doc_id, task, split in [r.args for r in requests]:
            from tqdm import tqdm

            pbar = tqdm(total=1, desc="Model Responding")
            visuals = doc_to_visual(self.task_dict[task][split][doc_id])
            urls = []
            for v in visuals:
                buf = io.BytesIO()
                v.convert("RGB").save(buf, format="JPEG", quality=85)
                urls.append("data:image/jpeg;base64," + base64.b64encode(buf.getvalue()).decode())
            content = [{"type": "image", "image": u} for u in urls] + [{"type": "text", "text": ctx.replace("<image>", "")}]
            try:
                inputs = self.processor.apply_chat_template([[{"role": "user", "content": content}]], add_generation_prompt=True, tokenize=True, return_dict=True, return_tensors="pt")
                cont = self._model.generate(**inputs)
            except Exception as exc:  # noqa: BLE001 - as the class does
                logging.getLogger("gemma-like").error("Failed: %s", exc)
                cont = None
            out.append("" if cont is None else "x")
            pbar.update(1)
        return out


class LlamaLike(Base):
    """lmms-eval 0.7.3's simple llama_vision: the prompt passed positionally after the images."""

    def generate_until(self, requests):
        out = []
        for ctx, _gen_kwargs, doc_to_visual, doc_id, task, split in [r.args for r in requests]:
            images = doc_to_visual(self.task_dict[task][split][doc_id])
            prompt = "<image>" * len(images) + ctx
            inputs = self.processor(images, prompt, return_tensors="pt")
            self._model.generate(**inputs)
            out.append("x")
        return out


class NoProcessor(Base):
    def generate_until(self, requests):
        return [str(self._model.generate(input_ids=None)) for _ in requests]


class ApiLike(Base):
    calls = 0

    def generate_until(self, requests):
        ApiLike.calls += 1
        return ["x" for _ in requests]


def colours(n):
    return [Image.new("RGB", (40 + i, 30), observe.PALETTE[-1 - i]) for i in range(n)]


def simple_args(text, visuals):
    return observe.request_args(True, text, visuals)


def test_a_swallowing_class_is_observed_stopped_and_leaves_nothing(processor, caplog, capsys):
    cls_call = type(processor).__dict__.get("__call__")
    from transformers.generation.utils import GenerationMixin

    generate = GenerationMixin.generate
    model = TinyLM()
    lm = GemmaLike(processor, model)
    recolour = observe.Recolour()
    visuals = [recolour(v) for v in colours(2)]
    before = TinyLM.generated
    with caplog.at_level(logging.DEBUG):
        seen = observe.observe(lm, simple_args("A) <image>B) <image>Q", visuals))
    # observed: the processor got the rendered text and the two images (data URLs, read back)
    assert seen.seen and seen.text == "<|user|><image><image>A) B) Q<|assistant|>", seen
    assert len(seen.images) == 2 and all(isinstance(i, str) and i.startswith("data:image/jpeg") for i in seen.images)
    got = [observe.load_any_image(i).convert("RGB").getpixel((5, 5)) for i in seen.images]
    assert all(max(abs(a - b) for a, b in zip(g, observe.colour_of(v))) < 8 for g, v in zip(got, visuals))
    assert seen.marker() == "<image>"
    # stopped before generation, nothing logged, printed or left behind
    assert TinyLM.generated == before
    assert not [r for r in caplog.records if r.name == "gemma-like"]
    captured = capsys.readouterr()
    assert "Model Responding" not in captured.err + captured.out
    assert type(processor).__dict__.get("__call__") is cls_call and GenerationMixin.generate is generate
    assert "generate" not in vars(model) and observe.PROBE_TASK not in lm.task_dict


def test_the_verdict_names_what_the_images_first_route_lost(processor):
    """SciFIBench C->F as written (labels before their figures) through the Gemma-like route: images
    first, labels cut off; the same request through an interleaving chat route is as written."""
    layout = layout_of([{"role": "user", "content": [{"type": "text", "text": "A) "}, {"type": "image", "url": None}, {"type": "text", "text": "B) "},
                                                     {"type": "image", "url": None}, {"type": "text", "text": "Which?"}]}])
    recolour = observe.Recolour()
    visuals = [recolour(v) for v in colours(2)]
    expected = [observe.colour_of(v) for v in visuals]
    lost = verdict_of(observe.observe(GemmaLike(processor, TinyLM()), simple_args("A) <image>B) <image>Which?", visuals)), layout, expected)
    assert isinstance(lost, Verdict) and lost.observed and lost.lost == ["images first, labels cut off from their figures"]

    class ChatLike(Base):
        is_simple = False

        def generate_until(self, requests):
            for _ctx, doc_to_messages, _gen_kwargs, doc_id, task, split in [r.args for r in requests]:
                messages = doc_to_messages(self.task_dict[task][split][doc_id])
                text = self.processor.apply_chat_template(messages, add_generation_prompt=True)
                images = [p["url"] for m in messages for p in m["content"] if p["type"] == "image"]
                self._model.generate(**self.processor(text=[text], images=images, return_tensors="pt"))
            return ["x"]

    messages = [{"role": "user", "content": [{"type": "text", "text": "A) "}, {"type": "image", "url": visuals[0]}, {"type": "text", "text": "B) "},
                                             {"type": "image", "url": visuals[1]}, {"type": "text", "text": "Which?"}]}]
    args = observe.request_args(False, "Which?", messages)
    kept = verdict_of(observe.observe(ChatLike(processor, TinyLM()), args), layout, expected)
    assert isinstance(kept, Verdict) and kept.ok and kept.observed
    # the images swapped on their way: seen by their colours
    swapped = [{"role": "user", "content": [{**p, "url": visuals[1 - visuals.index(p["url"])]} if p["type"] == "image" else p for p in messages[0]["content"]]}]
    args = observe.request_args(False, "Which?", swapped)
    moved = verdict_of(observe.observe(ChatLike(processor, TinyLM()), args), layout, expected)
    assert isinstance(moved, Verdict) and moved.lost and moved.lost[0].startswith("images reordered")


def test_positional_images_then_prompt_are_read_by_the_processors_signature(processor):
    recolour = observe.Recolour()
    visuals = [recolour(v) for v in colours(3)]
    seen = observe.observe(LlamaLike(processor, TinyLM()), simple_args("<image_1> then <image_2>", visuals))
    assert seen.text == "<image><image><image><image_1> then <image_2>" and len(seen.images) == 3
    layout = layout_of([{"role": "user", "content": [{"type": "image", "url": None}, {"type": "text", "text": " then "}, {"type": "image", "url": None}]}])
    verdict = verdict_of(seen, layout, [observe.colour_of(v) for v in visuals[:2]])
    assert "placeholder text left (<image_1>, <image_2>)" in verdict.lost and "3 of 2 images in the prompt" in verdict.lost


def test_a_processor_the_class_breaks_is_seen_to_break(processor):
    class Broken(Base):
        def generate_until(self, requests):
            for ctx, _gen_kwargs, doc_to_visual, _doc_id, _task, _split in [r.args for r in requests]:
                self.processor(text=[ctx], images=doc_to_visual(None), audios=[], return_tensors="pt")
            return ["x"]

    seen = observe.observe(Broken(processor, TinyLM()), simple_args("<image>Q", colours(1)))
    assert seen.error and not seen.seen
    verdict = verdict_of(seen, layout_of([]), [])
    assert verdict["status"] == NOT_OBSERVED and verdict["broken"] and "will fail on its first doc" in verdict["why"]


def test_without_a_processor_nothing_is_observed_and_nothing_generates():
    before = TinyLM.generated
    seen = observe.observe(NoProcessor(model=TinyLM()), simple_args("Q", []))
    assert not seen.seen and "reached generate without a transformers processor call" in seen.why and TinyLM.generated == before
    calls = ApiLike.calls
    seen = observe.observe(ApiLike(), simple_args("Q", []))
    assert ApiLike.calls == calls and "holds no transformers processor or model" in seen.why  # never sent a request


def test_bind_call_reads_any_call_shape(processor):
    img = Image.new("RGB", (8, 8))
    call = type(processor).__call__
    assert observe.bind_call(call, ([img], "p"), {}) == ("p", [img])
    assert observe.bind_call(call, (), {"text": ["p"], "images": [[img]]}) == (["p"], [[img]])
    assert observe.bind_call(lambda self, *a, **k: None, ("p", [img]), {}) == ("p", [img])


def test_recolour_gives_one_colour_per_picture():
    a, b = colours(2)
    a2 = a.copy()  # the same picture decoded again (a task's messages and its visuals are separate calls)
    r = observe.Recolour()
    assert r(a) is r(a2) and r(a) is not r(b) and r(r(a)) is r(a)
    assert observe.colour_of(r(a)) == tuple(float(x) for x in observe.PALETTE[0])
