"""The smoke checks every run makes (path.py); the cases' own live in components/smoke/cases."""
