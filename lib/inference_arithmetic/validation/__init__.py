"""Validation: published measurements of real serving runs, with their provenance (``data/``),
and the code that holds the serving layer's predictions against them (``measurements``).

Reached as ``ia.measurements``; nothing below this layer imports it.
"""
