"""C-DFL (Algorithm 2, Section V): compression operators and their delta, Proposition 2."""
