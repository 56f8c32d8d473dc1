"""Reading a registered parameter or sublayer as an attribute (``layer.weight``) goes through a
class-level stand-in (nn/layer.py ``_Registered``) instead of a missed look-up and ``__getattr__``;
the attribute rules stay those of ``__getattr__``."""
import numpy as np
import pytest

import headrace as paddle
import headrace.nn as nn
from headrace.core import context


class _Block(nn.Layer):
    def __init__(self, with_fc=True):
        super().__init__()
        if with_fc:
            self.fc = nn.Linear(2, 3)
        self.scale = self.create_parameter([3])


@pytest.fixture(autouse=True)
def eager():
    with context.static_mode_guard(False):
        yield


def test_registered_names_read_the_stores_and_keep_the_attribute_rules():
    a = _Block()
    assert a.fc is a._sub_layers["fc"] and a.scale is a._parameters["scale"]
    assert "fc" in vars(_Block) and "weight" in vars(nn.Linear)     # the stand-ins, on the classes
    b = _Block(with_fc=False)                                       # this instance has no `fc`
    with pytest.raises(AttributeError, match="'_Block' object has no attribute 'fc'"):
        _ = b.fc
    assert not hasattr(_Block, "fc")                                # on the class: absent, as before
    new = nn.Linear(2, 3)
    a.fc = new                                                      # re-registered: the new one
    assert a.fc is new and list(a.named_sublayers())[0][1] is new
    a.fc = "plain"                                                  # a plain value wins
    assert a.fc == "plain" and "fc" not in a._sub_layers
    del a.fc
    with pytest.raises(AttributeError):
        _ = a.fc
    a._parameters["scale"] = b.scale                                # the store is the truth
    assert a.scale is b.scale
    del a.scale
    with pytest.raises(AttributeError):
        _ = a.scale


def test_a_class_attribute_of_the_same_name_is_left_alone():
    class Own(nn.Layer):
        fc = "class value"

        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(2, 2)

    layer = Own()
    assert vars(Own)["fc"] == "class value"                         # not replaced by a stand-in
    assert isinstance(layer._sub_layers["fc"], nn.Linear)


def test_a_linear_layer_computes_with_its_registered_parameters():
    fc = nn.Linear(2, 3)
    x = paddle.to_tensor(np.ones((1, 2), "float32"))
    np.testing.assert_allclose(fc(x).numpy(), np.ones((1, 2)) @ fc.weight.numpy() + fc.bias.numpy(), rtol=1e-6)


class _ConfigMixin:
    @property
    def config(self):
        return {"hidden": 4}

    def head(self):
        return "mixin head"


class _WithMixin(nn.Layer, _ConfigMixin):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(2, 2)


class _Backbone(nn.Layer):
    def __init__(self, with_head):
        super().__init__()
        if with_head:
            self.head = nn.Linear(2, 2)


class _Classifier(_Backbone, _ConfigMixin):
    pass


def test_a_stand_in_never_hides_a_mixin_after_the_layer_base():
    """A stand-in lands on the class of the instance that registered the name (a bare nn.Layer
    container: on nn.Layer itself); a subclass whose MRO has the name after that class (a mixin)
    still gets the mixin's attribute, whatever other instances registered first."""
    model, classifier = _WithMixin(), _Classifier(False)
    holder = nn.Layer()
    holder.config = nn.Linear(2, 2)          # stand-in for `config` on nn.Layer
    _Backbone(True)                          # stand-in for `head` on _Backbone
    assert model.config == {"hidden": 4} and _WithMixin().config == {"hidden": 4}
    assert classifier.head() == "mixin head" and _Classifier(True).head() == "mixin head"
    assert _Classifier.head is _ConfigMixin.head
    assert isinstance(holder.config, nn.Linear)
    with pytest.raises(AttributeError, match="type object 'Layer' has no attribute 'config'"):
        _ = nn.Layer.config
