"""The papers' experiments, re-run: ``fitaudit reproduce NAME``, kept apart from the instruments.

* :mod:`fitaudit.experiments.overfit` -- Werpachowski, Gyorgy, Szepesvari,
  "Detecting overfitting via adversarial examples" (NeurIPS 2019);
* :mod:`fitaudit.experiments.examine` -- Shu, Liu, Qiu, Yuille, "Identifying
  model weakness with adversarial examiner" (AAAI 2020), and image models
  against Engstrom et al.'s exact grid;
* :mod:`fitaudit.experiments.pmv` -- Zhang et al., "Perturbed Model
  Validation" (2019).

Every reproduction shares :mod:`fitaudit.experiments.base` (mode,
clock, checkpointed units, saved files). Importing this package imports
none of them; the instruments never import it.
"""
