"""dflkit's simulator: DFL / C-DFL / D-SGD / C-SGD / synchronous and local SGD with torch.

Imports ``bounds`` for mixing matrices, zeta and compression; never imports ``plots``.
"""
