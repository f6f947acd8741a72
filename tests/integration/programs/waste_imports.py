"""Recomputed values and untouched memory made while importing a library are no finding at the import
line (the user cannot change what a module does at import); the same calls from the user's own lines are.
Run with --profile-only waste_imports.py. Lines asserted by tests/integration/cases/waste.py."""
import waste_import_lib                                 # line 4: both, at import: no finding

total = waste_import_lib.build(100_000)                 # line 6: recomputed values: a finding
kept = waste_import_lib.reserve()                       # line 7: untouched memory: a finding
print(total == waste_import_lib.TOTAL, len(kept), len(waste_import_lib.RESERVED))
