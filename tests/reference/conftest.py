# make_reference.py and families.py import torch and transformers, which only
# tests/reference/.venv has: pytest (--doctest-modules over tests/) must not import them.
collect_ignore = ["make_reference.py", "families.py"]
