"""DFL (Algorithm 1): Proposition 1 and its repair, the step schedule, and their independent checks.

``formulas`` (written once for numpy and sympy), ``proposition1`` (:func:`dfl_bound`), ``symbolic``,
``schedule`` (which steps are local), ``proof_sums`` (the sums inside the proof), ``monotonicity``
(Remarks 1-2), ``quadratic`` (exact expectations on quadratics), ``noise_drift`` (exact drift under
pure noise), ``montecarlo`` (simulation on smooth non-quadratic functions).
"""
