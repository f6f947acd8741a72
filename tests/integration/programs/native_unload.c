/* native_unload.c - a library native_unload.py loads, calls through and unloads again and again. */
int call_back(int (*cb)(int), int x)
{
    volatile int keep = x;
    return cb(x) + keep;
}
