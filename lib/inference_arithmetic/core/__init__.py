"""The core: the book's symbols, number formats, SymPy -> numpy compilation and the cache of
compiled formulas, the printers of a formula for each place it runs (JavaScript, numpy, plain
Python), printing of numbers, the rules every input is checked by, what a build reads of a
model, and the registries' shared machinery.

It imports nothing else of the library; every other layer stands on it.
"""
