"""The per-sample figure sizes' parts that need no model: the doc container a class reads our docs from, the
tags on the images a doc function returns, and what the sample browser reads of a sample (the whole path
runs in tests/commands/test_demo.py on a real class and in the model tier)."""

import numpy as np
from PIL import Image

from lmms_eval_earthsci.commands.report.html.samples import figures_seen as browser_figures
from lmms_eval_earthsci.core.boundary import figures_seen


class Rows(list):
    column_names = ["q"]

    def __getitem__(self, key):
        if key == "q":
            return [r["q"] for r in self]
        return list.__getitem__(self, key)


def test_the_doc_container_gives_our_docs_their_id_and_everything_else_as_it_was():
    docs = figures_seen._Docs(Rows([{"q": "a"}, {"q": "b"}]), "msearth_mcq")
    assert docs[1] == {"q": "b", figures_seen.DOC_KEY: ("msearth_mcq", 1)}
    assert docs[np.int64(0)][figures_seen.DOC_KEY] == ("msearth_mcq", 0)  # a numpy index (a class's sampler)
    assert docs["q"] == ["a", "b"] and docs[0:1] == [{"q": "a"}] and len(docs) == 2 and docs.column_names == ["q"]
    assert list(docs) == [{"q": "a"}, {"q": "b"}]  # iteration: the rows as they are


def test_a_doc_function_sees_the_doc_without_its_id_and_its_images_carry_it():
    seen = []

    def doc_to_messages(self, doc):
        seen.append(dict(doc))
        return [{"role": "user", "content": [{"type": "image", "url": Image.new("RGB", (40, 30))}, {"type": "text", "text": doc["q"]}]}]

    wrapped = figures_seen._doc_function(doc_to_messages)
    out = wrapped(None, {"q": "a", figures_seen.DOC_KEY: ("t", 3)})
    assert seen == [{"q": "a"}]
    image = out[0]["content"][0]["url"]
    assert image.info[figures_seen.TAG] == ("t", 3, [40, 30])
    assert image.convert("L").resize((20, 15)).info[figures_seen.TAG] == ("t", 3, [40, 30])  # PIL carries it through the class's conversions
    plain = wrapped(None, {"q": "b"})  # a doc read some other way: nothing tagged
    assert figures_seen.TAG not in plain[0]["content"][0]["url"].info


def test_the_browser_reads_well_formed_records_only():
    assert browser_figures({"earthsci_figures": [{"sent": [4000, 3000], "reached": [1456, 1092], "tokens": 2028}, "junk", {"sent": [1, 1]}]}) == [
        {"sent": [4000, 3000], "reached": [1456, 1092], "tokens": 2028}]
    assert browser_figures({}) is None and browser_figures({"earthsci_figures": "x"}) is None
