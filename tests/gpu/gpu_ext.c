/* A tiny CPython extension linked against the mock CUDA library, calling it the way a framework's C code
 * does (through the PLT, not through dlsym). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

int cudaMalloc(void **p, size_t n);
int cudaFree(void *p);
int cudaMemcpy(void *d, const void *s, size_t n, int kind);

static PyObject *alloc(PyObject *self, PyObject *args)
{
    Py_ssize_t n;
    if (!PyArg_ParseTuple(args, "n", &n))
        return NULL;
    void *p = NULL;
    if (cudaMalloc(&p, (size_t)n) != 0)
        return PyErr_Format(PyExc_MemoryError, "cudaMalloc failed");
    return PyLong_FromVoidPtr(p);
}

static PyObject *release(PyObject *self, PyObject *arg)
{
    void *p = PyLong_AsVoidPtr(arg);
    if (cudaFree(p) != 0)
        return PyErr_Format(PyExc_ValueError, "cudaFree failed");
    Py_RETURN_NONE;
}

static PyObject *upload(PyObject *self, PyObject *args)
{
    PyObject *dev;
    Py_buffer host;
    if (!PyArg_ParseTuple(args, "Oy*", &dev, &host))
        return NULL;
    int rc = cudaMemcpy(PyLong_AsVoidPtr(dev), host.buf, (size_t)host.len, 1);
    PyBuffer_Release(&host);
    if (rc != 0)
        return PyErr_Format(PyExc_ValueError, "cudaMemcpy failed");
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"alloc", alloc, METH_VARARGS, "cudaMalloc(n) -> device pointer"},
    {"release", release, METH_O, "cudaFree(pointer)"},
    {"upload", upload, METH_VARARGS, "cudaMemcpy host->device"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "pf_gpu_ext", NULL, -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit_pf_gpu_ext(void)
{
    return PyModule_Create(&module);
}
