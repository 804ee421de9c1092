"""Bad input to examine(): one clear InputError naming the argument."""

from __future__ import annotations

import numpy as np
import pytest
from examine_toys import LABELS, SPACE, classify, render

from fitaudit._errors import InputError
from fitaudit.examine import examine


def run(model=classify, generator=render, **kwargs):
    options = {"examiner": "random", "steps": 3, "random_state": 0, "factor_space": SPACE, "labels": LABELS}
    options.update(kwargs)
    return examine(model, generator, **options)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"steps": 0}, "`steps` must be a positive integer; got 0."),
        ({"steps": 2.5}, "`steps` must be an integer"),
        ({"loss": "hinge"}, "`loss` must be one of 'true_class_probability', 'zero_one', 'margin'"),
        ({"maximize": "yes"}, "`maximize` must be True or False"),
        ({"ranges": {"a": (0.8, 0.2)}}, "`ranges['a']` is inverted: low 0.8 > high 0.2."),
        ({"ranges": {"a": (2.0, 3.0)}}, "`ranges['a']` (2, 3) is empty inside the factor's range [0, 1]."),
        ({"ranges": {"a": (-0.5, 0.5)}}, "`ranges['a']` (-0.5, 0.5) must lie inside the factor's range [0, 1]."),
        ({"ranges": {"zoom": (0, 1)}}, "`ranges` names unknown factor(s) zoom; the factors are a, b, c."),
        ({"ranges": {"a": (0, np.nan)}}, "`ranges['a']` must be finite"),
        ({"ranges": {"a": "wide"}}, "`ranges['a']` must be (low, high) or one number"),
        ({"ranges": {"a": 0.1, "b": 0.2, "c": 0.0}}, "`ranges` fixes every factor"),
        ({"instances": [0, 9]}, "`instances` must lie in [0, 3]; got 0..9."),
        ({"instances": [1, 1]}, "`instances` must not repeat an instance."),
        ({"instances": 0}, "`instances` must be a positive integer; got 0."),
        ({"examiner": "simulated-annealing"}, "`examiner` must be one of"),
        ({"examiner": 3}, "`examiner` must be an examiner name"),
        ({"examiner_options": {"random_state": 1}}, "`examiner_options` must not hold `random_state`"),
        ({"chunk_size": 0}, "`chunk_size` must be a positive integer; got 0."),
        ({"random_state": -1}, "`random_state` must be a non-negative integer seed; got -1."),
        ({"n_reference": -2}, "`n_reference` must be an integer >= 0; got -2."),
    ],
)
def test_bad_arguments(kwargs, message):
    with pytest.raises(InputError) as info:
        run(**kwargs)
    assert message in str(info.value)


def test_plain_callable_needs_space_and_labels():
    with pytest.raises(InputError, match="`generator` must be a generator object"):
        examine(classify, render, steps=2)


def test_generator_with_the_wrong_batch_size():
    with pytest.raises(InputError, match=r"the generator must return one input per query \(1\); got an array of shape \(2, 4\)"):
        run(generator=lambda i, f: np.vstack([render(i, f)] * 2))


def test_generator_returning_nan():
    def broken(instances, factors):
        out = render(instances, factors)
        out[:, 0] = np.nan
        return out

    with pytest.raises(InputError, match="the generator returned NaN or infinite values."):
        run(generator=broken)


def test_generator_returning_text():
    with pytest.raises(InputError, match="the generator must return numbers"):
        run(generator=lambda i, f: np.array(["x"] * len(i)))


def test_generator_returning_the_wrong_input_shape_for_the_model():
    with pytest.raises(InputError, match="`x`: the callable model failed"):
        run(generator=lambda i, f: f[:, :1])


def test_labels_the_model_cannot_output():
    with pytest.raises(InputError, match=r"`generator.labels` holds label 5 but the model outputs 3 classes"):
        run(labels=[0, 1, 5, 0])


def test_non_integer_labels():
    with pytest.raises(InputError, match="`labels` must hold integer class labels"):
        run(labels=[0.5, 1, 2, 0])


def test_factor_named_like_a_log_column():
    from fitaudit.data.factors import Factor, FactorSpace

    space = FactorSpace([Factor("loss", 0.0, 1.0, 0.5, "u"), Factor("b", 0.0, 1.0, 0.5, "u"), Factor("c", 0, 1, 0, "u")])
    with pytest.raises(InputError, match="reserved query-log columns"):
        run(factor_space=space)


def test_checkpoint_dir_that_is_a_file(tmp_path):
    path = tmp_path / "file"
    path.write_text("x")
    with pytest.raises(InputError, match="`checkpoint_dir` must be a folder"):
        run(checkpoint_dir=path)
