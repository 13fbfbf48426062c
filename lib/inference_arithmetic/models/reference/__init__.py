"""What the reference implementation measured for every registry model (see measured.json).

Made by tests/reference/make_reference.py (`make reference`); read it with
``inference_arithmetic.models.config.measured(name)``.
"""
