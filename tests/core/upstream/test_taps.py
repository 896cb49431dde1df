"""One tap per upstream callable (core.upstream.taps): the callable is wrapped once, its subscribers run in the order
ORDER declares whatever order they subscribed in, a subscriber may go straight to the callable, and the wrap goes when
its last subscriber leaves, restoring exactly what was there. "Installed" is asked of the records."""

import pytest

from lmms_eval_earthsci.core.runtime import current
from lmms_eval_earthsci.core.upstream import patching, taps
from lmms_eval_earthsci.core.upstream.inventory import Entry

ENTRY = Entry("test subscriber", "subscribes", "x:Processor.__call__", __name__, "a test")


def make_class():
    class Processor:
        def __call__(self, text):
            return [text]

    return Processor


def around(name, log):
    def sub(call, self, text):
        log.append(name)
        return call(self, text + f"+{name}")

    return sub


def test_subscribers_run_in_the_declared_order_whatever_order_they_subscribed_in():
    cls, log = make_class(), []
    original = vars(cls)["__call__"]
    assert taps.ORDER["processor call"] == ("observe", "capture", "figures seen")  # its premise: the order written
    leave_figures = taps.subscribe("processor call", cls, "__call__", "figures seen", around("figures seen", log), entry=ENTRY)
    leave_capture = taps.subscribe("processor call", cls, "__call__", "capture", around("capture", log), entry=ENTRY)
    assert cls()("t") == ["t+capture+figures seen"] and log == ["capture", "figures seen"]
    wraps = [r for r in patching.records() if r.target.endswith(f"{cls.__qualname__}.__call__") and r.kind == "wraps"]
    assert [r.entry for r in wraps] == ["tap: processor call"]  # one wrap, whoever subscribed
    assert patching.installed(taps.ENTRIES["tap: processor call"], patching.where(cls, "__call__"))
    leave_capture()
    log.clear()
    assert cls()("t") == ["t+figures seen"] and log == ["figures seen"]
    leave_figures()
    assert vars(cls)["__call__"] is original  # the last one left: restored exactly
    assert not patching.installed(taps.ENTRIES["tap: processor call"], patching.where(cls, "__call__"))
    assert (id(cls), "__call__") not in current().patches.taps and not taps.subscribed(cls, "__call__", "figures seen")


def test_a_subscriber_can_go_straight_to_the_callable():
    """The probe's own request: its subscriber, outermost, calls the processor itself; the capture inside never
    sees it."""
    cls, log = make_class(), []

    def probe(call, self, text):
        log.append("observe")
        return call.original(self, text)

    leave = [taps.subscribe("processor call", cls, "__call__", "capture", around("capture", log), entry=ENTRY),
             taps.subscribe("processor call", cls, "__call__", "observe", probe, entry=ENTRY)]
    assert cls()("t") == ["t"] and log == ["observe"]
    for step in reversed(leave):
        step()


def test_an_inherited_method_is_removed_again_and_an_undeclared_subscriber_is_refused():
    base = make_class()

    class Child(base):
        pass

    leave = taps.subscribe("processor call", Child, "__call__", "capture", around("capture", []), entry=ENTRY)
    assert "__call__" in vars(Child) and Child()("t") == ["t+capture"]
    leave()
    assert "__call__" not in vars(Child) and Child()("t") == ["t"]
    with pytest.raises(ValueError, match="not a subscriber of the 'processor call' tap"):
        taps.subscribe("processor call", Child, "__call__", "someone", around("x", []), entry=ENTRY)
    assert taps.subscribe("processor call", Child, "no_such_method", "capture", around("x", []), entry=ENTRY) is None


def test_a_subclass_tap_goes_through_its_parents_and_original_skips_both():
    """A processor class whose ``__call__`` is inherited from a tapped parent: a call runs the subclass's
    subscribers, then the parent's; the probe's ``call.original`` reaches the processor itself, seeing neither."""
    base, log = make_class(), []

    class Child(base):
        pass

    def probe(call, self, text):
        log.append("observe")
        return call.original(self, text)

    leave = [taps.subscribe("processor call", base, "__call__", "capture", around("capture", log), entry=ENTRY),
             taps.subscribe("processor call", Child, "__call__", "figures seen", around("figures seen", log), entry=ENTRY)]
    assert Child()("t") == ["t+figures seen+capture"] and log == ["figures seen", "capture"]
    log.clear()
    leave.append(taps.subscribe("processor call", Child, "__call__", "observe", probe, entry=ENTRY))
    assert Child()("t") == ["t"] and log == ["observe"]
    for step in reversed(leave):
        step()
    assert "__call__" not in vars(Child) and base()("t") == ["t"]


def test_two_classes_of_one_name_have_a_tap_each():
    first, second, log = make_class(), make_class(), []
    assert first.__qualname__ == second.__qualname__  # its premise: one name, two classes
    leave = [taps.subscribe("processor call", first, "__call__", "capture", around("first", log), entry=ENTRY),
             taps.subscribe("processor call", second, "__call__", "capture", around("second", log), entry=ENTRY)]
    assert first()("t") == ["t+first"] and second()("t") == ["t+second"]
    for step in leave:
        step()
    assert first()("t") == ["t"] == second()("t")


def test_a_replaced_subscription_survives_the_earlier_unsubscribe_and_leave_takes_it_off():
    cls, log = make_class(), []
    sub = around("capture", log)
    earlier = taps.subscribe("processor call", cls, "__call__", "capture", sub, entry=ENTRY)
    taps.subscribe("processor call", cls, "__call__", "capture", sub, entry=ENTRY)
    earlier()  # replaced since: nothing happens
    assert taps.subscribed(cls, "__call__", "capture") and cls()("t") == ["t+capture"]
    taps.leave(cls, "__call__", "capture")
    assert not taps.subscribed(cls, "__call__", "capture") and cls()("t") == ["t"]
    assert not patching.installed(ENTRY, patching.where(cls, "__call__"))


def test_a_classmethod_is_refused():
    class Loader:
        @classmethod
        def load(cls):
            return cls

    with pytest.raises(TypeError, match="is a classmethod"):
        taps.subscribe("generate", Loader, "load", "capture", lambda call, *a: call(*a), entry=ENTRY)
