"""Graphs and their mixing matrices: topologies, weight rules, spectra (zeta, beta; Assumption 1.6,
Lemma 7)."""
