"""The core: the book's symbols, number formats, SymPy -> numpy compilation and the cache of
compiled formulas, printing of numbers, the rules every input is checked by, and the registries'
shared machinery.

It imports nothing else of the library; every other layer stands on it.
"""
