"""Planning from the bounds: the best (tau1, tau2, eta) under a budget, and the methods compared."""
