"""How ``paddle.Model`` runs one batch, in each mode.

``DynamicAdapter`` (eager): the network runs on Tensors, ``loss.backward()``, then the
optimizer's ``minimize`` and ``network.clear_gradients()`` (only on ``update``: gradients of
skipped updates accumulate, which is ``accumulate_grad_batches``).

``StaticAdapter`` (after ``paddle.enable_static()``, as the reference's StaticGraphAdapter): the
forward pass is built once from the ``inputs``/``labels`` InputSpecs into the program that owns
the network's parameters (headrace refuses ops whose inputs live in another program), with that
program's own ops set aside meanwhile; ``test`` (outputs only) and ``eval`` (outputs, losses,
metric inputs) programs are ``clone(for_test=True)`` copies taken before the loss and before
``minimize``, the training program a clone taken after it; then the program's ops are put back
as they were.  Batches run through an
Executor in the global scope; the startup program runs once, into a side scope, and only the
variables the global scope does not hold yet are copied over, so values set before the first
batch (``Model.load``, ``set_state_dict``) are kept.
"""
from __future__ import annotations

import numpy as np

from ..core.errors import HeadraceError
from ..eager import Tensor, no_grad
from ..nn.tensor import add_n, to_tensor


def to_list(value) -> list:
    if value is None:
        return []
    return list(value) if isinstance(value, (list, tuple)) else [value]


def to_numpy(value) -> np.ndarray:
    if isinstance(value, Tensor):
        return value.numpy()
    return np.asarray(value)


def _update_metrics(model, metric_inputs) -> list:
    """``metric.update(*numpy arrays of metric.compute's outputs)`` for every metric; the updates'
    results, as the reference's train_batch/eval_batch return them."""
    return [metric.update(*[to_numpy(v) for v in values]) for metric, values in zip(model._metrics, metric_inputs)]


def _result(losses, metrics):
    losses = [to_numpy(v) for v in losses]
    if losses and metrics:
        return losses, metrics
    return losses if losses else metrics


class DynamicAdapter:
    def __init__(self, model):
        self.model = model

    @staticmethod
    def _tensors(values) -> list:
        return [v if isinstance(v, Tensor) else to_tensor(np.asarray(v)) for v in to_list(values)]

    def _forward(self, inputs, labels):
        model = self.model
        ins, lbls = self._tensors(inputs), self._tensors(labels)
        outputs = to_list(model.network(*ins))
        losses = to_list(model._loss(*(outputs + lbls))) if model._loss is not None else []
        metric_inputs = [to_list(m.compute(*(outputs + lbls))) for m in model._metrics]
        return losses, metric_inputs

    def train_batch(self, inputs, labels=None, update=True):
        model = self.model
        model.network.train()
        losses, metric_inputs = self._forward(inputs, labels)
        final = losses[0] if len(losses) == 1 else add_n(losses)
        final.backward()
        if update:
            model._optimizer.minimize(final)
            model.network.clear_gradients()
        return _result(losses, _update_metrics(model, metric_inputs))

    def eval_batch(self, inputs, labels=None):
        self.model.network.eval()
        with no_grad():
            losses, metric_inputs = self._forward(inputs, labels)
        return _result(losses, _update_metrics(self.model, metric_inputs))

    def predict_batch(self, inputs):
        self.model.network.eval()
        with no_grad():
            outputs = self.model.network(*self._tensors(inputs))
        return [to_numpy(o) for o in to_list(outputs)]

    def save_inference(self, path):
        raise NotImplementedError(
            "Model.save(path, training=False) in dygraph mode needs dygraph-to-static export (the reference's "
            "jit.save), which headrace does not have yet: build the Model in static mode (paddle.enable_static()) to save an "
            "inference model, or save for training (training=True)")


class StaticAdapter:
    def __init__(self, model):
        self.model = model
        self._built = None      # {"feeds": [...], "outputs": [...], "losses": [...], "metrics": [[...]], progs}
        self._executor = None
        self._initialized = False

    def prepared(self) -> None:
        """``Model.prepare`` ran: (re)build the programs on first use."""
        self._built = None

    def _program(self):
        from ..core import context

        params = self.model.network.parameters()
        return params[0].block.program if params else context.default_main_program()

    def _build(self) -> dict:
        """Build the forward (and loss, metric inputs, ``minimize``) into the parameters' program
        with that program's own ops set aside, so the three clones hold this model's ops only and
        the program itself is left as it was (a second Model in the same program stays apart)."""
        from ..core import context
        from ..static import program_guard

        model = self.model
        main, startup = self._program(), context.default_startup_program()
        block = main.global_block()
        prior = list(block.ops)
        block.ops[:] = []
        try:
            with program_guard(main, startup):
                ins = [spec._create_feed_layer() for spec in model._inputs]
                lbls = [spec._create_feed_layer() for spec in model._labels]
                outputs = to_list(model.network(*ins))
                test = main.clone(for_test=True)
                losses = to_list(model._loss(*(outputs + lbls))) if model._loss is not None else []
                metric_outs = [to_list(m.compute(*(outputs + lbls))) for m in model._metrics]
                evaluation = main.clone(for_test=True)
                if model._optimizer is not None and losses:
                    model._optimizer.minimize(losses[0] if len(losses) == 1 else add_n(losses))
                train = main.clone()
        finally:
            block.ops[:] = prior
            main._bump()
        return {"inputs": ins, "labels": lbls, "outputs": outputs, "losses": losses, "metrics": metric_outs,
                "train": train, "eval": evaluation, "test": test, "startup": startup}

    def build(self) -> dict:
        """The programs (built on first use, without running anything)."""
        if self._built is None:
            self._built = self._build()
            self._initialized = False
        return self._built

    def ready(self) -> dict:
        """The programs, built, with the startup values the global scope lacked filled in."""
        from ..runtime import CPUPlace
        from ..runtime.scope import Scope, global_scope
        from ..static import Executor

        self.build()
        if self._executor is None:
            self._executor = Executor(CPUPlace())
        if not self._initialized:
            side, scope = Scope(), global_scope()
            self._executor.run(self._built["startup"], scope=side)
            for name in side.local_var_names():
                if scope._get_array(name) is None:
                    scope._set_array(name, side._get_array(name))
            self._initialized = True
        return self._built

    def _run(self, key, feeds, values, fetch):
        """Run program ``key`` ('train', 'eval' or 'test') feeding ``values`` to ``feeds``."""
        built = self.ready()
        if len(values) != len(feeds):
            names = [v.name for v in feeds]
            raise HeadraceError(f"Model: the {key} program is fed {names} ({len(feeds)} arrays), "
                                f"got {len(values)} arrays")
        feed = {var.name: to_numpy(v) for var, v in zip(feeds, values)}
        return self._executor.run(built[key], feed=feed, fetch_list=fetch)

    def _loss_and_metrics(self, mode, inputs, labels):
        built = self.ready()
        flat = [v for outs in built["metrics"] for v in outs]
        results = self._run(mode, built["inputs"] + built["labels"], to_list(inputs) + to_list(labels),
                            built["losses"] + flat)
        losses, rest = results[:len(built["losses"])], results[len(built["losses"]):]
        metric_inputs = []
        for outs in built["metrics"]:
            metric_inputs.append(rest[:len(outs)])
            rest = rest[len(outs):]
        return _result(losses, _update_metrics(self.model, metric_inputs))

    def train_batch(self, inputs, labels=None, update=True):
        if not update:
            raise NotImplementedError("Model.train_batch(update=False) (accumulate_grad_batches > 1) is not "
                                      "supported in static mode yet; use dygraph mode")
        return self._loss_and_metrics("train", inputs, labels)

    def eval_batch(self, inputs, labels=None):
        return self._loss_and_metrics("eval", inputs, labels)

    def predict_batch(self, inputs):
        built = self.ready()
        return [np.asarray(v) for v in self._run("test", built["inputs"], to_list(inputs), built["outputs"])]

    def save_inference(self, path):
        from ..framework.inference_io import save_inference_model

        built = self.ready()
        save_inference_model(path, built["inputs"], built["outputs"], self._executor, program=built["test"])
