"""Validation: published measurements of real serving runs, with their provenance (``data/``),
and the code that holds the serving layer's predictions against them (``measurements``); and
this machine as a lab, what ``make measure`` measured here and the prediction of it
(``machine``).

Reached as ``ia.measurements``; nothing below this layer imports it.
"""
