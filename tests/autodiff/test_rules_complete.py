"""Every forward op either has a gradient rule or is declared to have none (NO_GRADIENT), and the
ops a rule emits are registered."""
import headrace  # noqa: F401  (registers every op)
from headrace.ops.gradrule import NO_GRADIENT
from headrace.ops.registry import lookup, registered_ops

def _forward_ops():
    # ops named test_* are registered by test modules on purpose (e.g. without a rule)
    return [t for t in registered_ops() if lookup(t).forward_type is None and not t.startswith("test_")]


def test_every_forward_op_has_a_gradient_rule_or_none_by_declaration():
    missing = [t for t in _forward_ops() if lookup(t).grad is None]
    assert not missing, f"ops without a gradient rule: {missing}"


def test_gradient_ops_name_a_registered_forward_op():
    for t in registered_ops():
        opdef = lookup(t)
        if opdef.forward_type is not None:
            assert lookup(opdef.forward_type).grad not in (None, NO_GRADIENT), t
            assert opdef.grad is None, f"{t}: second-order gradients are not supported"


def test_non_differentiable_ops_are_the_expected_ones():
    none = sorted(t for t in _forward_ops() if lookup(t).grad is NO_GRADIENT)
    expected = {"accuracy", "adam", "clip_by_norm", "sign", "c_allreduce_sum", "c_broadcast", "c_reduce_sum",
                "coalesce_tensor", "fused_adam", "c_fused_allreduce_sum", "assign_value", "equal", "fill_any_like", "fill_constant",
                "gaussian_random", "greater_equal", "greater_than", "less_equal", "less_than",
                "lars_momentum", "momentum", "not_equal", "seed", "sgd", "shape", "truncated_gaussian_random", "uniform_random"}
    expected |= {"arg_max", "arg_min", "bernoulli", "bitwise_and", "bitwise_not", "bitwise_or", "bitwise_xor",
                 "elementwise_floordiv", "eye", "gcd", "isfinite_v2", "isinf_v2", "isnan_v2", "lcm", "linspace",
                 "logical_and", "logical_not", "logical_or", "logical_xor", "multinomial", "nextafter",
                 "one_hot_v2", "poisson", "randint", "randperm", "reduce_all", "reduce_any", "signbit",
                 "unique", "where_index", "bitwise_left_shift", "bitwise_right_shift", "bincount",
                 "histogram", "searchsorted", "binomial", "standard_gamma", "unique_consecutive"}   # tensor ops
    expected |= {"adadelta", "adagrad", "adamax", "adamw", "decayed_adagrad", "lamb", "nadam", "radam",
                 "rmsprop", "lr_schedule"}   # ops/optim_more.py: update ops; ops/lr_schedule.py
    assert set(none) == expected
