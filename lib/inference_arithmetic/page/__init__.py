"""The page: what a chapter draws. Controls, widgets that recompute in the browser (live, with
the JavaScript it carries: scripts), the calculator (its form, readout and page data), diagrams
and the formula reference.

Loaded on first use (``ia.widgets``, ``ia.calculator``, ...): matplotlib and ipywidgets cost
about 0.3 s to import, and only chapters that draw pay it.
"""
