"""Calls a library (argv[1]) that dlopens another by bare name, found through its own RUNPATH; prints what
the inner library returned (42), -1 when dlopen found nothing."""
import ctypes
import sys

print(ctypes.CDLL(sys.argv[1]).outer_value())
