# make_reference.py imports torch and transformers, which only tests/reference/.venv has:
# pytest (--doctest-modules over tests/) must not import it.
collect_ignore = ["make_reference.py"]
