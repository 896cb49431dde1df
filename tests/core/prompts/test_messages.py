from lmms_eval_earthsci.core.prompts import messages as core_messages


def resolver(k):
    return f"IMG{k}"


def test_interleaving_keeps_order_repeats_and_skips_whitespace():
    text = "Compare <image_2> with <image_1>, then <image_2> again.\n<image_3>  \n"
    msgs = core_messages.chat_messages(text, resolver)
    assert msgs == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "Compare "},
                {"type": "image", "url": "IMG2"},
                {"type": "text", "text": " with "},
                {"type": "image", "url": "IMG1"},
                {"type": "text", "text": ", then "},
                {"type": "image", "url": "IMG2"},
                {"type": "text", "text": " again.\n"},
                {"type": "image", "url": "IMG3"},
            ],
        }
    ]


def test_bare_image_placeholders_count_in_order_and_system_message():
    msgs = core_messages.chat_messages("<image>Caption: x <image> q", resolver, system="sys")
    assert msgs[0] == {"role": "system", "content": [{"type": "text", "text": "sys"}]}
    assert [p.get("url") or p["text"] for p in msgs[1]["content"]] == ["IMG1", "Caption: x ", "IMG2", " q"]


def test_no_placeholder_images_first_or_last():
    first = core_messages.chat_messages("question", images=["I"], images_first=True)[0]["content"]
    last = core_messages.chat_messages("question", images=["I"], images_first=False)[0]["content"]
    assert [p["type"] for p in first] == ["image", "text"]
    assert [p["type"] for p in last] == ["text", "image"]


def test_interleaved_segments():
    img_a, img_b = object(), object()
    msgs = core_messages.interleaved_messages(["A) ", img_a, "B) ", img_b, "", "Which?"], system="s")
    assert msgs[0]["role"] == "system"
    assert [(p["type"], p.get("text", p.get("url"))) for p in msgs[1]["content"]] == [
        ("text", "A) "), ("image", img_a), ("text", "B) "), ("image", img_b), ("text", "Which?")
    ]


def test_simple_backend_visuals_distinct_sorted_and_text():
    text = "x <image_3> y <image_1> z <image_3>"
    assert core_messages.referenced_images(text) == [1, 3]
    assert core_messages.simple_visuals(text, resolver) == ["IMG1", "IMG3"]
    assert core_messages.simple_text(text) == text
    assert core_messages.simple_text(text, "<image>") == "x <image> y <image> z <image>"
    assert "".join(p["text"] for p in core_messages.chat_messages(text, resolver)[0]["content"] if p["type"] == "text") == "x  y  z "


def test_fill_fields_is_one_pass_and_leaves_other_braces():
    from lmms_eval_earthsci.core.prompts.messages import fill_fields

    t = 'Q: {question} O: {options} {"A": p} {question+options}'
    assert fill_fields(t, {"question": "has {options}", "options": "X", "question+options": "QX"}) == 'Q: has {options} O: X {"A": p} QX'
    assert fill_fields("{a}", {}) == "{a}"
