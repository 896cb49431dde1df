"""core.boundary.layout_verdict: a rendered prompt against the layout its chat messages wrote (what a model class lost)."""

from PIL import Image

from lmms_eval_earthsci.core.boundary.layout_verdict import check_prompt, image_order, layout_of, mean_colour

QWEN = r"<\|vision_start\|>(?:<\|image_pad\|>)+<\|vision_end\|>"
IMG = "<|vision_start|><|image_pad|><|image_pad|><|vision_end|>"


def c2f_messages(system=None):
    content = []
    for label in "ABCDE":
        content += [{"type": "text", "text": f"{label}) "}, {"type": "image", "url": object()}]
    content.append({"type": "text", "text": "\nWhich figure best matches the caption? Answer with the letter."})
    msgs = [{"role": "user", "content": content}]
    return ([{"role": "system", "content": [{"type": "text", "text": system}]}] if system else []) + msgs


def test_interleaved_as_written():
    layout = layout_of(c2f_messages())
    prompt = "<|im_start|>user\n" + "".join(f"{c}) {IMG}" for c in "ABCDE") + "\nWhich figure best matches the caption? Answer with the letter.<|im_end|>\n<|im_start|>assistant\n"
    v = check_prompt(layout, prompt, QWEN, images_passed=5)
    assert v.ok and v.says() == "as written" and v.received == v.expected == "T I T I T I T I T I T"


def test_images_first_cuts_labels_off():
    layout = layout_of(c2f_messages())
    prompt = "<|im_start|>user\n" + IMG * 5 + "A) B) C) D) E) \nWhich figure best matches the caption? Answer with the letter.<|im_end|>"
    assert check_prompt(layout, prompt, QWEN).lost == ["images first, labels cut off from their figures"]


def test_one_label_moved_and_image_counts():
    layout = layout_of(c2f_messages())
    prompt = "".join(f"{c}) {IMG}" for c in "ABC") + "D) E) " + IMG * 2 + "\nWhich figure best matches the caption? Answer with the letter."
    assert check_prompt(layout, prompt, QWEN).lost == ["labels cut off from their figures"]
    assert check_prompt(layout, prompt.replace(IMG, "", 5), QWEN).lost[0] == "0 of 5 images in the prompt"
    assert check_prompt(layout, "".join(f"{c}) {IMG}" for c in "ABCDE") + "\nWhich figure best matches the caption? Answer with the letter.", QWEN, images_passed=4).lost == ["4 of 5 images passed"]


def test_system_dropped_and_placeholder_left():
    layout = layout_of(c2f_messages(system="Reply with JSON probabilities."))
    body = "".join(f"{c}) {IMG}" for c in "ABCDE") + "\nWhich figure best matches the caption? Answer with the letter."
    assert check_prompt(layout, "<|im_start|>system\nReply with JSON probabilities.<|im_end|>" + body, QWEN).ok
    assert check_prompt(layout, "<|im_start|>system\nYou are a helpful assistant.<|im_end|>" + body, QWEN).lost == ["system prompt dropped"]
    emma = layout_of([{"role": "user", "content": [{"type": "text", "text": "Which is larger?"}, {"type": "image", "url": 1}, {"type": "text", "text": "Options: A or B"}]}])
    v = check_prompt(emma, IMG + "Which is larger? <image_1> Options: A or B", QWEN)
    assert "placeholder text left (<image_1>)" in v.lost and "images first" in v.lost


def test_text_then_image_single_figure():
    layout = layout_of([{"role": "user", "content": [{"type": "text", "text": "Question?"}, {"type": "image", "url": 1}]}])
    assert check_prompt(layout, "USER: Question? <image>\nASSISTANT:", "<image>").ok
    assert check_prompt(layout, "USER: <image>\nQuestion? ASSISTANT:", "<image>").lost == ["images first"]
    assert check_prompt(layout, "USER: Quest? <image>", "<image>").lost == ["text changed"]


def test_image_order_by_mean_colour():
    red, green, blue = (Image.new("RGB", (40, 30), c) for c in [(200, 20, 20), (20, 200, 20), (20, 20, 200)])
    sigs = [mean_colour(i) for i in (red, green, blue)]
    assert image_order(sigs, [mean_colour(i.resize((56, 28))) for i in (red, green, blue)]) is None
    assert image_order(sigs, [mean_colour(i) for i in (green, red, blue)]).startswith("images reordered")
    assert image_order(sigs, sigs[:2]) == "2 of 3 images passed"
    assert image_order(sigs, [mean_colour(Image.new("RGB", (9, 9), (120, 120, 120)))] * 3) == "an image passed is none of the doc's"


def test_a_task_system_turn_survives_a_default_inserted_before_it():
    """lmms-eval 0.7.3's qwen3_vl does ``messages.insert(0, default system)`` on what doc_to_messages returned."""
    from lmms_eval_earthsci.core.prompts.messages import Messages, interleaved_messages

    default = {"role": "system", "content": [{"type": "text", "text": "You are a helpful assistant."}]}
    own = interleaved_messages(["Question", object()], system="Reply with JSON.")
    own.insert(0, default)
    assert [m["role"] for m in own] == ["system", "user"] and own[0]["content"][0]["text"] == "Reply with JSON."
    plain = Messages([{"role": "user", "content": [{"type": "text", "text": "Q"}]}])
    plain.insert(0, default)  # no system of the task's own: the class's default stays, as lmms-eval does
    assert plain[0] is default and len(plain) == 2


def test_simple_route_handling():
    from lmms_eval_earthsci.core.boundary.layout_verdict import simple_verdict

    c2f = layout_of(c2f_messages())
    text = "".join(f"{c}) <image>\n" for c in "ABCDE") + "Which figure best matches the caption? Answer with the letter."
    assert simple_verdict("strip", c2f, text, 5).lost == ["images first, labels cut off from their figures"]
    assert simple_verdict("keep", c2f, text, 5).ok  # <image> left where the text puts it (llava_hf simple)
    mac = layout_of([{"role": "system", "content": [{"type": "text", "text": "Answer in JSON."}]}, {"role": "user", "content": [{"type": "text", "text": "The story."}, {"type": "image", "url": 1}]}])
    assert simple_verdict("strip", mac, "Answer in JSON.\nThe story.", 1).lost == ["images first"]  # the system text moved into the user turn is still there


def test_numbered_form_for_interleave_visuals():
    """The form lmms-eval's simple Qwen classes read with interleave_visuals=True: <image i>, the i-th image
    doc_to_visual gives (EMMA: referenced numbers in order; a repeat names the same image)."""
    from lmms_eval_earthsci.core.boundary.interleave import numbered_form

    never = lambda: (_ for _ in ()).throw(AssertionError("counted images of a text that names them"))  # noqa: E731
    assert numbered_form("Compare <image_2> and <image_3>, then <image_2> again.", never) == "Compare <image 1> and <image 2>, then <image 1> again."
    assert numbered_form("A) <image>\nB) <image>\nWhich?", never) == "A) <image 1>\nB) <image 2>\nWhich?"
    assert numbered_form("What does the map show?", lambda: 1) == "<image 1>What does the map show?"
    assert numbered_form("Caption only.", lambda: 0) == "Caption only."
