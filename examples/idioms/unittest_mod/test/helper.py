"""Shared by the tests, imported as test.helper (so the project root must be on sys.path)."""
SAMPLE = "hello small world"
