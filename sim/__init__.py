"""dflkit's simulator: DFL / C-DFL / D-SGD / C-SGD / synchronous and local SGD with torch.

Imports ``bounds`` for mixing matrices, zeta and compression; ``plots`` only inside ``sim.plan``'s figure
step (``dfl-sim plan`` draws its prediction against the measured losses), never at import.
"""
