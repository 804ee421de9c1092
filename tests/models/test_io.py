"""fitaudit.models.io.class_order: the class names in the model's output order."""

from __future__ import annotations

import pytest

from fitaudit._errors import InputError


def test_class_order_one_rule_for_commands_and_the_api(tmp_path) -> None:
    """Given names win (checked against the recorded ones), else the recorded ones, else None."""
    from fitaudit.models.io import class_order

    pytest.importorskip("torch")
    from fitaudit.models import save_torch_model

    config = {"architecture": "linear", "kwargs": {"in_features": 4, "n_classes": 2}, "n_classes": 2,
              "classes": ["cat", "dog"]}
    from fitaudit.models.architectures import build_architecture

    folder = save_torch_model(build_architecture(config), config, tmp_path / "m")
    assert class_order(folder) == ["cat", "dog"]
    assert class_order(folder, "cat, dog") == ["cat", "dog"]
    with pytest.raises(InputError, match="`--classes` dog,cat contradicts the class names the model records"):
        class_order(folder, ["dog", "cat"], name="--classes")
    assert class_order(None, "b,a") == ["b", "a"]  # an in-memory model records nothing: the given order
    assert class_order(object()) is None
    with pytest.raises(InputError, match="names a class twice"):
        class_order(None, "a,a")
    with pytest.raises(InputError, match="must list class names"):
        class_order(None, " , ")


def test_runs_class_order_needs_one_recorded_order(tmp_path) -> None:
    """Several runs: the names they record must agree (a run recording none takes them), and so must --classes."""
    pytest.importorskip("torch")
    from fitaudit.models import save_torch_model
    from fitaudit.models.architectures import build_architecture
    from fitaudit.models.io import runs_class_order

    def run(name: str, classes: list[str] | None):
        config = {"architecture": "linear", "kwargs": {"in_features": 4, "n_classes": 2}, "n_classes": 2}
        config |= {"classes": classes} if classes else {}
        return save_torch_model(build_architecture(config), config, tmp_path / name)

    bare, cat_dog, dog_cat = run("bare", None), run("a", ["cat", "dog"]), run("b", ["dog", "cat"])
    assert runs_class_order([bare, bare]) is None
    assert runs_class_order([bare, cat_dog, cat_dog]) == ["cat", "dog"]
    assert runs_class_order([bare, bare], "dog,cat") == ["dog", "cat"]
    with pytest.raises(InputError, match=r"`--classes` dog,cat contradicts the class names the model records"):
        runs_class_order([bare, cat_dog], "dog,cat", name="--classes")
    with pytest.raises(InputError, match=r"`--models`: the models record different class names \(cat,dog in .*a', "
                                         r"dog,cat in .*b'\)"):
        runs_class_order([cat_dog, bare, dog_cat])
