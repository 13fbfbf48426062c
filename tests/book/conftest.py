"""The book's tests share one fixture: Chromium (tests/book/browser.py), launched once per file."""

from tests.book.browser import browser  # noqa: F401 (registered for every test file here)
