"""The integration cases, one module per theme; tests/integration/run_case.py runs one."""
