"""Graphs and their mixing matrices: topologies, weight rules, spectra (zeta, beta; Lemmas 4-6)."""
