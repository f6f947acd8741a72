x = bytearray(1_500_000)   # line 1
print("odd ok")
